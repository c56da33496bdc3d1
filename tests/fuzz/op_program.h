// The input of fuzz_op_run: a program of commands over a few tensor slots, run once on
// every device of the context (that device is "home"). Read with ByteReader; missing
// bytes read as zero.
//
//   program  := command*                       (at most kMaxCommands)
//   command  := byte % kCommandCount, then its fields:
//   create   := slot dtype rank dim{min(rank & 0x7f, 8)} device fill
//                 dtype: the byte as int8_t (so also 0, 8..127 and negatives: unknown)
//                 rank: bits 0-6 the rank (also above 8); bit 7 passes a null shape
//                 dim: kWideDim then u64 (any int64), else the byte as int8_t
//                 device: kRawDevice then u64, else (home + byte) % device count
//                 fill: every byte of the new tensor is set to it (0xff: NaN floats)
//   destroy  := handle
//   upload   := handle number:offset number:size flags:(bit 0 null host pointer) fill
//   download := handle number:offset number:size flags:(bit 0 null host pointer)
//   copy     := handle:dst handle:src
//   run_op   := op params count:inputs handle{min(count, kMaxListed)}
//               count:outputs handle{min(count, kMaxListed)} op_flags [number:desc_size]
//                 op: the byte as int8_t
//                 params: byte % 3: 0 null; 1 the op's own struct, struct_size set, the
//                   rest of it raw bytes; 2 number:struct_size then kRawParamBytes raw bytes
//                 count: kMaxCount for SIZE_MAX, else the byte
//   handle   := kNullHandle | kStaleHandle (the last one destroyed) | kMadeUpHandle u64
//               | slot (byte % kSlots; null when the slot is empty)
#pragma once

#include <cstddef>
#include <cstdint>

namespace phx::fuzz {

enum Command : uint8_t { kCreate, kDestroy, kUpload, kDownload, kCopy, kRunOp, kCommandCount };

constexpr size_t kSlots = 8;
constexpr size_t kMaxCommands = 64;
// Handles read per list; a larger count still reaches the library, which must refuse it
// before reading past what an op can have.
constexpr size_t kMaxListed = 16;
constexpr size_t kRawParamBytes = 64;

constexpr uint8_t kWideDim = 0x80;
constexpr uint8_t kRawDevice = 0xff;
constexpr uint8_t kMaxCount = 0xff;

constexpr uint8_t kNullHandle = 0xff;
constexpr uint8_t kStaleHandle = 0xfe;
constexpr uint8_t kMadeUpHandle = 0xfd;

enum ParamsMode : uint8_t { kNoParams, kOwnParams, kRawParams, kParamsModeCount };

// op_flags bits.
constexpr uint8_t kNullInputs = 1 << 0;
constexpr uint8_t kNullOutputs = 1 << 1;
constexpr uint8_t kNoTicket = 1 << 2;
constexpr uint8_t kDescSize = 1 << 3;  // a number follows: desc.struct_size
constexpr uint8_t kNullDesc = 1 << 4;
constexpr uint8_t kWaitTicket = 1 << 5;

constexpr uint8_t kNullHostPointer = 1 << 0;

}  // namespace phx::fuzz
