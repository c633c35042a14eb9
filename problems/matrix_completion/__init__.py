"""Matrix completion (recommender ratings): the Hogwild! paper's main workload.

Each observed rating (u, v, z) touches one row of the user factors L and one row
of the item factors R; workers update L and R in place without locks.

Two models:

``biased`` (the default; Koren's SVD / Funk SVD, as in Surprise and LIBMF):
prediction m + b_u + c_v + L_u . R_v with m the training mean, and a regulariser
per rating:

    f_uv = (prediction - z)^2 + mu (||L_u||^2 + ||R_v||^2) + mu_bias (b_u^2 + c_v^2)

``paper`` (the Hogwild! paper's model: no mean, no biases, a degree-scaled
regulariser), with |row u| the number of training ratings of user u and |col v|
those of item v:

    f_uv = (L_u . R_v - z)^2 + mu ||L_u||^2 / |row u| + mu ||R_v||^2 / |col v|

summed over the ratings, so each user and item row is regularised by mu once in
total. It must learn the mean in its factors, and it does worse than predicting
the mean plus biases on sparse ratings (a long tail of items rated once or
twice): keep it for reproducing the paper, not for a first run.

Both take SGD steps on f_uv / 2 (LIBMF's convention, so a step of s moves a
factor by s * error * other factor). The kernels are generated per rank: the rank
is a compile-time constant of the update, so LLVM unrolls and vectorises the
rank-length loops, and fastmath lets it vectorise the dot product.

Implicit feedback (which items each user interacted with, no ratings) is ranked
rather than predicted: ImplicitFactorization (module implicit, WARP and BPR
losses; module ranking, precision@k and the rest); with user and item features
(LightFM's hybrid model, for items and users unseen in training), by
HybridFactorization (module hybrid).

Modules: models (the two models, chosen once by name: RatingModel, mf_objective),
kernels (compiled update, loss, warp forms, prediction loops), ids (input forms,
id mapping), estimator (MatrixFactorization, the test RMSE).
"""
from hogwild.problems.matrix_completion.estimator import (MatrixFactorization, rmse,
                                                          rmse_metric)
from hogwild.problems.matrix_completion.hybrid import HybridFactorization
from hogwild.problems.matrix_completion.implicit import ImplicitFactorization
from hogwild.problems.matrix_completion.ids import IdIndex, check_values, ratings_arrays
from hogwild.problems.matrix_completion.models import (MAX_RANK, MODELS, WARP_RANK,
                                                       RatingModel, factor_kernels,
                                                       factor_warp_update, mf_objective,
                                                       rating_model)

__all__ = ["MatrixFactorization", "ImplicitFactorization", "HybridFactorization",
           "mf_objective", "rmse", "rmse_metric", "IdIndex", "check_values", "ratings_arrays",
           "MAX_RANK", "MODELS",
           "WARP_RANK", "RatingModel", "factor_kernels", "factor_warp_update", "rating_model"]
