"""The type of an embedding in memory: a float32 row of the model's output."""

import numpy as np
import numpy.typing as npt

# A list of 384 Python floats takes about 12 KB, the float32 row 1.5 KB: a batch of tens of
# thousands of passages is held until its one write transaction.
EmbeddingVector = npt.NDArray[np.float32]
Vectors = list[EmbeddingVector]
