// The arithmetic of reducing collectives, element by element in rank order (comm.h):
// what makes their results the same from run to run whichever thread reduces what.
#pragma once

#include <phynexus/phynexus.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace phx::comm {

// An empty string when op (a phx_reduce_op as the caller passed it) is defined for dtype,
// else why not.
std::string reduction_refusal(phx_dtype dtype, int op);

// A running reduction of count elements of dtype: start with rank 0's values, add each
// later rank's in order, then finish into the result. The accumulator holds f32 for the
// float dtypes and int64 for the integers (a wrapped integer sum is the same either way).
class Reduction {
 public:
  Reduction(phx_dtype dtype, phx_reduce_op op, size_t ranks);

  // Bytes of accumulator count elements need.
  size_t accumulator_bytes(size_t count) const;
  void start(void* accumulator, const void* values, size_t count) const;
  // start with first, then add second, in one pass where the arithmetic allows.
  void start(void* accumulator, const void* first, const void* second, size_t count) const;
  void add(void* accumulator, const void* values, size_t count) const;
  void finish(const void* accumulator, void* result, size_t count) const;
  // Whether the accumulator already holds the result, in the dtype (an f32 sum, max or
  // min): finish would only copy it.
  bool accumulator_is_result() const;

 private:
  phx_dtype dtype_;
  phx_reduce_op op_;
  size_t ranks_;
};

}  // namespace phx::comm
