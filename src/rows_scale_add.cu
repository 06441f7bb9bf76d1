#include "kernels.cuh"
#include "rows.h"

namespace ew {
extern const DispatchRow scale_add_row = op_row<ScaleAdd>();
} // namespace ew
