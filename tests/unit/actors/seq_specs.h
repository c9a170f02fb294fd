// The sequences the batching tests run through one pipeline (continuous
// batching: test_pipeline_batch.cpp, and over a paged cache:
// test_pipeline_paged.cpp), and what each saw.
// defines: test::SeqSpec, test::SeqSeen, test::seq_specs()
#pragma once

#include <cstdint>
#include <vector>

#include "actors/pipeline.h"

namespace ls::test {

struct SeqSpec {
  std::vector<int32_t> prompt;
  int n_out;              // greedy tokens to take
  int cancel_after = -1;  // cancel the sequence from its callback after this many
};

// What one sequence saw.
struct SeqSeen {
  std::vector<float> rows;  // the last logits row of each of its steps
  std::vector<int32_t> tokens;
  SeqEnd end;
};

// Seven sequences of different prompt and output lengths, one cancelled
// after 3 tokens. In the paged test's pool each holds at most 2 blocks
// over its life (25 positions), any 4 at once 6, any 3 at once 5.
inline std::vector<SeqSpec> seq_specs() {
  std::vector<SeqSpec> s;
  s.push_back({{1, 17, 42, 99, 7, 300, 5}, 6});
  s.push_back({{1, 3}, 9});
  s.push_back({{1, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263}, 4});
  s.push_back({{1, 5, 6}, 12, 3});  // cancelled after 3 tokens
  s.push_back({{1, 77}, 1});
  s.push_back({{1, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27}, 7});
  s.push_back({{1, 400, 401}, 5});
  return s;
}

}  // namespace ls::test
