#include "kernels.cuh"
#include "rows.h"

namespace ew {
extern const DispatchRow mul_row = op_row<Mul>();
} // namespace ew
