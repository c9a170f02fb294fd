// One attention block (kernels/cpu/attention_cpu_block.h), portable: the
// plain C++ lanes of attention_cpu_lanes.h, 16 of them when head_dim allows,
// 1 for other head dims.
// defines: attention_block_portable (kernels/cpu/attention_cpu_block.h)
#include "kernels/cpu/attention_cpu_block.h"

#define LS_ATTN_TARGET

#include "kernels/cpu/attention_cpu_lanes.h"
#include "kernels/cpu/attention_cpu_body.h"

namespace ls {
void attention_block_portable(const AttnBlockArgs& a) {
  if (a.head_dim % 16 == 0) return attn_block<VecLanes<16>>(a);
  attn_block<VecLanes<1>>(a);
}
}  // namespace ls
