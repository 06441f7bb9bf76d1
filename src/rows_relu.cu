#include "kernels.cuh"
#include "rows.h"

namespace ew {
extern const DispatchRow relu_row = op_row<Relu>();
} // namespace ew
