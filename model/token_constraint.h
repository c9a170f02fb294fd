// A constraint on the tokens a sampler may choose (constrained decoding,
// model/sampler.h): allows(t) says whether token t may come next, accept(t)
// records that it came. The sampler asks about the token it drew and, only
// when that one is not allowed, masks the whole row and draws again
// (llama.cpp's order for its grammars): the draw then follows the chain over
// the allowed tokens alone.
// defines: TokenConstraint
#pragma once

#include <cstdint>

namespace ls {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  virtual bool allows(int32_t token) const = 0;
  virtual void accept(int32_t token) = 0;
  virtual void reset() = 0;  // back to the start of the output
};

}  // namespace ls
