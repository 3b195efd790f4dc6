"""The logistic probe's shapes that its memory formula follows: the row blocks it standardises
and scores in, and where it changes form with the width of its rows. One owner for what the
probe (probing/standardize.py, softmax.py) does and the formula (memory/formulas.py) counts.

Up to EIGEN_MAX_FEATURES features the fast probe preconditions with the eigenvectors of the
training covariance (p x p float64, several of them: 134 MB each at 4,096);
above it (flattened token stores: 6,000 to 250,000 features) with the diagonal of unit
variances, which costs no p x p matrix. Every pooled width here (at most EEGPT's 2,048) stays in
the eigen form. Standard library only: the memory formulas import it at parse time.
"""

EIGEN_MAX_FEATURES = 4096
CHUNK_ROWS = 8192  # rows standardised at a time (validation/test scoring, copies), float32
FIT_CHUNK_ROWS = 2048  # rows per block while fitting the scaler (float64) or the covariance


FULL_BLOCK_ROWS = CHUNK_ROWS + 2 * FIT_CHUNK_ROWS
# A streamed fit (training rows left in the store) reads and standardises this many bytes of
# rows at a time, a whole number of FIT_CHUNK_ROWS blocks: its scaler sums the same blocks in
# the same order as the in-memory fit's, so both scalers are equal bit for bit.
STREAM_BLOCK_BYTES = 64 << 20


def stream_block_rows(n_features: int) -> int:
    """Rows of one block of a streamed fit (at least FIT_CHUNK_ROWS)."""
    blocks = STREAM_BLOCK_BYTES // (4 * n_features) // FIT_CHUNK_ROWS
    return max(1, blocks) * FIT_CHUNK_ROWS


def block_share(n_train: int, n_val: int, n_test: int) -> float:
    """The share of its full blocks a fit holds at once: one scoring or standardising block
    (at most the largest split's rows) and one float64 block of the scaler's fit (twice its
    rows' worth, at most the training rows), over FULL_BLOCK_ROWS. 1 once a split has 8,192
    rows and training 2,048."""
    held = min(CHUNK_ROWS, max(n_train, n_val, n_test)) + 2 * min(FIT_CHUNK_ROWS, n_train)
    return held / FULL_BLOCK_ROWS


def eigen_preconditioner(n_features: int) -> bool:
    """Whether a probe of this width takes the eigen form (else the diagonal one)."""
    return n_features <= EIGEN_MAX_FEATURES
