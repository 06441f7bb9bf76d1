#include "kernels.cuh"
#include "rows.h"

namespace ew {
extern const DispatchRow add_row = op_row<Add>();
} // namespace ew
