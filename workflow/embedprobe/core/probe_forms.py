"""Where the logistic probe changes form with the width of its rows: one owner for the threshold
the probe (probing/softmax.py) and its memory formula (memory/formulas.py) both follow.

Up to EIGEN_MAX_FEATURES features the fast probe preconditions with the eigenvectors of the
training covariance (p x p float64; the formula counts 4-5 such matrices: 512-640 MB at 4,096);
above it (flattened token stores: 6,000 to 250,000 features) with the diagonal of unit
variances, which costs no p x p matrix. Every pooled width here (at most EEGPT's 2,048) stays in
the eigen form. Standard library only: the memory formulas import it at parse time.
"""

EIGEN_MAX_FEATURES = 4096


def eigen_preconditioner(n_features: int) -> bool:
    """Whether a probe of this width takes the eigen form (else the diagonal one)."""
    return n_features <= EIGEN_MAX_FEATURES
