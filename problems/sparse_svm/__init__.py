"""Sparse linear classification (SVM hinge loss, logistic loss) with the Hogwild!
paper's degree-scaled L2 regulariser.

Objective, with n samples, labels y_e in {-1, +1} and d_u = number of samples
whose row has a nonzero in feature u:

    F(w, b) = (1/n) sum_e [ l(y_e (<w, x_e> + b)) + (reg / 2) sum_{u in e} (n / d_u) w_u^2 ]
            = (1/n) sum_e l(y_e (<w, x_e> + b)) + (reg / 2) ||w||^2

(the second line counts only features that occur), so ``reg`` is scikit-learn's
``alpha`` and LIBLINEAR's ``C = 1 / (n * reg)``. The intercept b is not
regularised (scikit-learn's fit_intercept) and is 0 without one. Splitting the
regulariser over the samples keeps every update sparse: sample e touches only its
own features (and the intercept).
"""
from hogwild.problems.sparse_svm.estimator import SparseSVM
from hogwild.problems.sparse_svm.inputs import (as_csr, binary_labels, check_loss, check_reg,
                                               class_indices, label_array, signs)
from hogwild.problems.sparse_svm.kernels import (INTERCEPT_PAD, INTERCEPT_SLOT, intercept_of,
                                                predicts_positive)
from hogwild.problems.sparse_svm.objectives import (INTERCEPT_RATE, auto_step,
                                                   error_rate_metric, multiclass_objective,
                                                   svm_file_objective, svm_objective)

__all__ = ["SparseSVM", "as_csr", "binary_labels", "check_loss", "check_reg", "class_indices",
           "label_array", "signs", "INTERCEPT_PAD", "INTERCEPT_SLOT", "intercept_of",
           "predicts_positive", "INTERCEPT_RATE", "auto_step", "error_rate_metric",
           "multiclass_objective", "svm_file_objective", "svm_objective"]
