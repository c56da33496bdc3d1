// Tests of the integer GEMM (gemm_s8.h) on every instruction-set path this machine runs
// (gemm_s8_with_isa), bit-exact against an int64 reference of the documented rule: every
// A dtype, zero points per tensor and per column, bias, each output stage with and
// without relu, transposed B, a transposed (column-strided) C, shapes that are no
// multiple of any tile, and the int32 wrap-around. Its speed is measured by
// bench/bench_npu_sim.cpp, not here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "phx/kernels/gemm_s8.h"

namespace phx::kernels {
namespace {

ThreadPool& pool() {
  static ThreadPool p(4);  // more threads than cores: the split must not matter
  return p;
}

struct Case {
  int64_t m, n, k;
  phx_dtype a_dtype;
  bool trans_b = false;
  bool zero_points = false;  // a_zero_point and per-column b zero points
  bool bias = false;
  bool transposed_c = false;  // C(i, j) at c[j * m + i]
  // Row strides of A and B past their rows' values (the gap filled with other bytes).
  int64_t a_gap = 0, b_gap = 0;
};

const char* name(phx_dtype d) {
  switch (d) {
    case PHX_DTYPE_U8:
      return "u8";
    case PHX_DTYPE_I8:
      return "i8";
    case PHX_DTYPE_I16:
      return "i16";
    case PHX_DTYPE_I32:
      return "i32";
    default:
      return "f32";
  }
}

std::string describe(const Case& c, phx_dtype out, bool relu) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " a=" + name(c.a_dtype) + " tb=" + std::to_string(c.trans_b) +
         " zp=" + std::to_string(c.zero_points) + " bias=" + std::to_string(c.bias) +
         " tc=" + std::to_string(c.transposed_c) + " out=" + name(out) +
         " relu=" + std::to_string(relu);
}

int64_t qmin(phx_dtype d) { return d == PHX_DTYPE_U8 ? 0 : d == PHX_DTYPE_I16 ? -32768 : -128; }
int64_t qmax(phx_dtype d) { return d == PHX_DTYPE_U8 ? 255 : d == PHX_DTYPE_I16 ? 32767 : 127; }

// The operands of a case, the exact accumulators, and the expected output of a stage.
struct Fixture {
  Case c;
  std::vector<int32_t> a;              // values, stored below in a_bytes as a_dtype
  std::vector<unsigned char> a_bytes;  // with the row stride k + a_gap
  std::vector<int8_t> b;
  std::vector<int32_t> b_zero, bias;
  std::vector<double> multiplier;
  int32_t a_zero = 0, y_zero = 0;
  std::vector<int64_t> acc;  // exact, before any wrap

  Fixture(const Case& cs, std::mt19937& rng) : c(cs) {
    std::uniform_int_distribution<int32_t> av(int32_t(qmin(c.a_dtype)), int32_t(qmax(c.a_dtype)));
    std::uniform_int_distribution<int32_t> bv(-128, 127);
    const size_t a_size = c.a_dtype == PHX_DTYPE_I16 ? 2 : 1;
    a.resize(size_t(c.m * c.k));
    a_bytes.resize(size_t(c.m * (c.k + c.a_gap)) * a_size);
    if (c.a_gap > 0)
      for (auto& byte : a_bytes) byte = static_cast<unsigned char>(bv(rng));
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = av(rng);
      const size_t at = (i / size_t(c.k) * size_t(c.k + c.a_gap) + i % size_t(c.k)) * a_size;
      if (a_size == 2) {
        const auto v = static_cast<int16_t>(a[i]);
        std::memcpy(&a_bytes[at], &v, 2);
      } else {
        a_bytes[at] = static_cast<unsigned char>(a[i]);
      }
    }
    b.resize(size_t(c.k * c.n));
    for (auto& v : b) v = static_cast<int8_t>(bv(rng));
    if (c.zero_points) {
      a_zero = av(rng);
      for (int64_t j = 0; j < c.n; ++j) b_zero.push_back(bv(rng));
    }
    if (c.bias) {
      std::uniform_int_distribution<int32_t> biasv(-100000, 100000);
      for (int64_t j = 0; j < c.n; ++j) bias.push_back(biasv(rng));
    }
    std::uniform_real_distribution<double> mv(1e-5, 3e-3);
    for (int64_t j = 0; j < c.n; ++j) multiplier.push_back(mv(rng));
    y_zero = int32_t(qmin(c.a_dtype) + 3);
    acc.resize(size_t(c.m * c.n));
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        int64_t s = c.bias ? bias[size_t(j)] : 0;
        for (int64_t k = 0; k < c.k; ++k) {
          const int64_t bk = c.trans_b ? b[size_t(j * c.k + k)] : b[size_t(k * c.n + j)];
          s += (a[size_t(i * c.k + k)] - int64_t{a_zero}) *
               (bk - (c.zero_points ? b_zero[size_t(j)] : 0));
        }
        acc[size_t(i * c.n + j)] = s;
      }
  }

  // The documented output stage, as plainly as it reads.
  double expected(int64_t i, int64_t j, phx_dtype out, bool relu, int32_t y_zp) const {
    int64_t s = acc[size_t(i * c.n + j)];
    if (c.a_dtype != PHX_DTYPE_I16) s = static_cast<int32_t>(static_cast<uint32_t>(s));
    const double m = multiplier[size_t(j)];
    switch (out) {
      case PHX_DTYPE_I32:
        return double(relu ? std::max<int64_t>(s, 0) : s);
      case PHX_DTYPE_F32: {
        const auto v = static_cast<float>(double(s) * m);
        return relu && v < 0.0f ? 0.0 : double(v);
      }
      default: {
        const double q = std::nearbyint(double(s) * m) + y_zp;
        const double lo = relu ? std::max<double>(double(qmin(out)), y_zp) : double(qmin(out));
        return std::clamp(q, lo, double(qmax(out)));
      }
    }
  }

  void check(const char* isa, phx_dtype out, bool relu) const {
    SCOPED_TRACE(std::string(isa) + " " + describe(c, out, relu));
    const int32_t y_zp = out == PHX_DTYPE_I8 || out == PHX_DTYPE_U8 || out == PHX_DTYPE_I16
                             ? int32_t(std::clamp<int64_t>(y_zero, qmin(out), qmax(out)))
                             : 0;
    const size_t size = out == PHX_DTYPE_I32 || out == PHX_DTYPE_F32 ? 4
                        : out == PHX_DTYPE_I16                       ? 2
                                                                     : 1;
    // A padded row stride: the padding must stay untouched.
    const int64_t ld = c.transposed_c ? c.m + 3 : c.n + 3;
    const int64_t outer = c.transposed_c ? c.n : c.m;
    std::vector<unsigned char> cbuf(size_t(outer * ld) * size, 0xA5);
    // B with its row stride: b's rows, then b_gap bytes that must not count.
    const int64_t b_rows = c.trans_b ? c.n : c.k, b_cols = c.trans_b ? c.k : c.n;
    std::vector<int8_t> b_strided(size_t(b_rows * (b_cols + c.b_gap)), int8_t{-77});
    for (int64_t r = 0; r < b_rows; ++r)
      std::copy_n(b.begin() + r * b_cols, b_cols, b_strided.begin() + r * (b_cols + c.b_gap));
    GemmS8Args g;
    g.m = c.m;
    g.n = c.n;
    g.k = c.k;
    g.a_dtype = c.a_dtype;
    g.a = a_bytes.data();
    g.lda = c.k + c.a_gap;
    g.a_zero_point = a_zero;
    g.b = b_strided.data();
    g.trans_b = c.trans_b;
    g.ldb = b_cols + c.b_gap;
    g.b_zero_point = c.zero_points ? b_zero.data() : nullptr;
    g.bias = c.bias ? bias.data() : nullptr;
    g.out_dtype = out;
    g.c = cbuf.data();
    g.ldc_row = c.transposed_c ? 1 : ld;
    g.ldc_col = c.transposed_c ? ld : 1;
    g.multiplier = multiplier.data();
    g.y_zero_point = y_zp;
    g.relu = relu;
    ASSERT_TRUE(gemm_s8_with_isa(g, pool(), isa));
    size_t failures = 0;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const unsigned char* p = cbuf.data() + size_t(i * g.ldc_row + j * g.ldc_col) * size;
        double got = 0;
        switch (out) {
          case PHX_DTYPE_I32:
            got = *reinterpret_cast<const int32_t*>(p);
            break;
          case PHX_DTYPE_F32:
            got = *reinterpret_cast<const float*>(p);
            break;
          case PHX_DTYPE_I16:
            got = *reinterpret_cast<const int16_t*>(p);
            break;
          case PHX_DTYPE_U8:
            got = *p;
            break;
          default:
            got = static_cast<int8_t>(*p);
            break;
        }
        const double want = expected(i, j, out, relu, y_zp);
        if (got != want && ++failures <= 5)
          ADD_FAILURE() << "C(" << i << ", " << j << "): got " << got << ", expected " << want;
      }
    EXPECT_EQ(failures, 0u);
    for (int64_t r = 0; r < outer; ++r)
      for (int64_t e = (c.transposed_c ? c.m : c.n); e < ld; ++e)
        for (size_t byte = 0; byte < size; ++byte)
          ASSERT_EQ(cbuf[size_t(r * ld + e) * size + byte], 0xA5) << "padding written";
  }
};

std::vector<phx_dtype> outputs_for(phx_dtype a) {
  std::vector<phx_dtype> outs = {PHX_DTYPE_F32, PHX_DTYPE_I8, PHX_DTYPE_U8, PHX_DTYPE_I16};
  if (a != PHX_DTYPE_I16) outs.push_back(PHX_DTYPE_I32);
  return outs;
}

TEST(QuantGemm, EveryPathIsBitExact) {
  std::mt19937 rng(7);
  const std::vector<const char*> isas = gemm_s8_supported_isas();
  std::printf("gemm_s8 paths here:");
  for (const char* isa : isas) std::printf(" %s", isa);
  std::printf(" (default %s)\n", gemm_s8_isa());
  const int64_t shapes[][3] = {{1, 1, 1},    {7, 129, 300}, {129, 7, 33},
                               {300, 33, 7}, {13, 37, 0},   {64, 96, 130}};
  for (phx_dtype a_dtype : {PHX_DTYPE_U8, PHX_DTYPE_I8, PHX_DTYPE_I16}) {
    for (const auto& s : shapes) {
      for (int variant = 0; variant < 4; ++variant) {
        Case c{s[0], s[1], s[2], a_dtype};
        c.trans_b = variant & 1;
        c.zero_points = variant >= 2;
        c.bias = variant != 1;
        c.transposed_c = variant == 3;
        const Fixture f(c, rng);
        for (const char* isa : isas)
          for (phx_dtype out : outputs_for(a_dtype))
            for (bool relu : {false, true}) f.check(isa, out, relu);
      }
    }
  }
}

TEST(QuantGemm, LargeProblemThreadedOnEveryPath) {
  std::mt19937 rng(11);
  Case c{200, 300, 517, PHX_DTYPE_I8};
  c.zero_points = true;
  c.bias = true;
  const Fixture f(c, rng);
  for (const char* isa : gemm_s8_supported_isas()) {
    f.check(isa, PHX_DTYPE_I8, false);
    f.check(isa, PHX_DTYPE_F32, true);
  }
}

// Rows of A and B with gaps after their values (as in a slice of a wider tensor): the
// packers read the values only. Sizes past a whole block of the VNNI packers (64 ks, 12 rows
// of A, 32 columns of B) and short of the next.
TEST(QuantGemm, StridedOperandsOnEveryPath) {
  std::mt19937 rng(5);
  for (phx_dtype a_dtype : {PHX_DTYPE_U8, PHX_DTYPE_I8, PHX_DTYPE_I16}) {
    for (bool trans_b : {false, true}) {
      Case c{25, 70, 131, a_dtype};
      c.trans_b = trans_b;
      c.bias = true;
      c.a_gap = 5;
      c.b_gap = 9;
      const Fixture f(c, rng);
      for (const char* isa : gemm_s8_supported_isas()) {
        f.check(isa, PHX_DTYPE_F32, false);
        if (a_dtype != PHX_DTYPE_I16) f.check(isa, PHX_DTYPE_I32, false);
      }
    }
  }
}

// K = 40000 products of 255 * 127 exceed int32: the accumulator wraps, the same on
// every path.
TEST(QuantGemm, Int32WrapAroundIsTheSameOnEveryPath) {
  std::mt19937 rng(3);
  Case c{5, 40, 40000, PHX_DTYPE_U8};
  Fixture f(c, rng);
  std::fill(f.a_bytes.begin(), f.a_bytes.end(), 255);
  std::fill(f.a.begin(), f.a.end(), 255);
  std::fill(f.b.begin(), f.b.end(), int8_t{127});
  std::fill(f.acc.begin(), f.acc.end(), int64_t{40000} * 255 * 127);
  for (const char* isa : gemm_s8_supported_isas()) f.check(isa, PHX_DTYPE_I32, false);
}

// A scale that is not finite leaves the result unspecified, but must not reach the int
// conversion as NaN (undefined behaviour; found by tests/fuzz/fuzz_op_run): NaN goes to the
// zero point, infinity saturates.
TEST(QuantGemm, NonFiniteMultiplierGivesTheZeroPointOrSaturates) {
  const int8_t a[1] = {1}, b[2] = {1, 1};
  const double multiplier[2] = {std::nan(""), INFINITY};
  for (const char* isa : gemm_s8_supported_isas()) {
    int8_t c[2] = {0, 0};
    GemmS8Args g;
    g.m = 1;
    g.n = 2;
    g.k = 1;
    g.a_dtype = PHX_DTYPE_I8;
    g.a = a;
    g.lda = 1;
    g.b = b;
    g.ldb = 2;
    g.out_dtype = PHX_DTYPE_I8;
    g.c = c;
    g.ldc_row = 2;
    g.ldc_col = 1;
    g.multiplier = multiplier;
    g.y_zero_point = 3;
    ASSERT_TRUE(gemm_s8_with_isa(g, pool(), isa));
    EXPECT_EQ(c[0], 3) << isa;
    EXPECT_EQ(c[1], 127) << isa;
  }
}

// gemm_s8_isa() follows PHX_CPU_ISA, which the forced_isa ctest entries set: avx2 and
// generic cap it at the best path at or below them that the machine has; any other value
// (avx512, avx512-bf16) or none leaves the best path.
TEST(QuantGemm, PhxCpuIsaCapsTheChoice) {
  const std::vector<const char*> names = gemm_s8_supported_isas();
  const std::vector<std::string> ranked = {"generic", "avx2", "avx512-vnni"};  // rising
  const char* env = std::getenv("PHX_CPU_ISA");
  const std::string asked = env != nullptr ? env : "";
  size_t top = ranked.size() - 1;
  if (asked == "generic") top = 0;
  if (asked == "avx2") top = 1;
  std::string want;
  for (size_t r = 0; r <= top; ++r)
    for (const char* name : names)
      if (ranked[r] == name) want = name;
  EXPECT_EQ(want, gemm_s8_isa()) << "PHX_CPU_ISA=" << asked;
}

}  // namespace
}  // namespace phx::kernels
