// Tests of the host GEMM against a float64 reference, on every ISA path this machine
// can run (gemm_with_isa), for every dtype combination, transposition, bias,
// activation, batching (with broadcast), odd shapes and padded leading dimensions.
//
// Tolerances. The inputs are generated as values of the input dtype, so the reference
// (float64, products exact) sees exactly what the kernel sees and only the kernel's
// f32 arithmetic is measured. A dot product of length K accumulated in f32 (with FMA or
// VDPBF16PS, in any order and split into K blocks that are added into C) is a sum of K
// products with at most K roundings on any path, each of relative size u = 2^-24, so
//   |s_f32 - s| <= gamma_K * sum|a_i b_i|,  gamma_K = K u / (1 - K u) ~ K u.
// Adding the bias rounds once more (u |s + bias|). We allow twice that (2 K u sum|ab| +
// 2 u |s + bias|) plus 1e-30 for exact zeros. The activations are 1-Lipschitz up to
// max|gelu'| = 1.129 and max|silu'| = 1.0998, so the error so far grows by at most 1.13;
// the vector exp / erfc approximations add a relative error below 1e-6 (Taylor exp to
// r^7 and the erfc fit are 1.2e-7; the argument -z^2 of exp carries z^2 u), allowed as
// 1e-5 |result|. A 16-bit output is then rounded once: half an ulp, |v| 2^-8 for bf16
// and |v| 2^-11 for f16 (plus 2^-25, half the smallest f16 subnormal).
#include "phx/kernels/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gemm_dispatch.h"
#include "phx/kernels/convert.h"

namespace phx::kernels {
namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24

float round_to(float v, phx_dtype d) {
  if (d == PHX_DTYPE_BF16) return bf16_to_f32(f32_to_bf16(v));
  if (d == PHX_DTYPE_F16) return f16_to_f32(f32_to_f16(v));
  return v;
}

// A buffer of n elements of dtype d filled with values uniform in [-scale, scale]
// (already representable in d); vals holds them as float.
struct Buffer {
  phx_dtype dtype;
  std::vector<float> vals;
  std::vector<float> f32;
  std::vector<uint16_t> h16;
  Buffer(phx_dtype d, size_t n, std::mt19937& rng, float scale = 1.0f) : dtype(d), vals(n) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    for (auto& v : vals) v = round_to(dist(rng), d);
    if (d == PHX_DTYPE_F32) {
      f32 = vals;
    } else {
      h16.resize(n);
      for (size_t i = 0; i < n; ++i)
        h16[i] = d == PHX_DTYPE_BF16 ? f32_to_bf16(vals[i]) : f32_to_f16(vals[i]);
    }
  }
  const void* data() const {
    return dtype == PHX_DTYPE_F32 ? static_cast<const void*>(f32.data()) : h16.data();
  }
};

struct Problem {
  int64_t m, n, k;
  int64_t batch = 1;
  phx_dtype in = PHX_DTYPE_F32;
  bool ta = false, tb = false;
  int64_t pad = 0;  // extra elements in every leading dimension
  bool bcast_a = false, bcast_b = false;
  bool bias = false;
  bool bias_rows = false;  // GemmArgs::bias_rows, one value per row of C
  float scale = 1.0f;
};

const char* dtype_name(phx_dtype d) {
  return d == PHX_DTYPE_F32 ? "f32" : d == PHX_DTYPE_F16 ? "f16" : "bf16";
}

std::string describe(const Problem& p) {
  return "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         " batch=" + std::to_string(p.batch) + " in=" + dtype_name(p.in) +
         " ta=" + std::to_string(p.ta) + " tb=" + std::to_string(p.tb) +
         " pad=" + std::to_string(p.pad) + " bcast_a=" + std::to_string(p.bcast_a) +
         " bcast_b=" + std::to_string(p.bcast_b) + " bias=" + std::to_string(p.bias) +
         " bias_rows=" + std::to_string(p.bias_rows);
}

const char* act_name(phx_activation a) {
  switch (a) {
    case PHX_ACTIVATION_RELU:
      return "relu";
    case PHX_ACTIVATION_GELU:
      return "gelu";
    case PHX_ACTIVATION_SILU:
      return "silu";
    default:
      return "none";
  }
}

double act_ref(double x, phx_activation a) {
  switch (a) {
    case PHX_ACTIVATION_RELU:
      return x < 0 ? 0 : x;
    case PHX_ACTIVATION_GELU:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case PHX_ACTIVATION_SILU:
      return x / (1.0 + std::exp(-x));
    default:
      return x;
  }
}

// The operands of a problem and the reference pre-activation sums (with bias) and
// sum|a b| of every output element.
struct Fixture {
  Problem p;
  int64_t lda, ldb, ldc, sa, sb, sc;
  Buffer a, b;
  std::vector<float> bias, bias_rows;
  std::vector<double> ref, mag;

  static Buffer make(phx_dtype d, size_t n, std::mt19937& rng, float scale) {
    return Buffer(d, n, rng, scale);
  }

  Fixture(const Problem& pr, std::mt19937& rng)
      : p(pr),
        lda((pr.ta ? pr.m : pr.k) + pr.pad),
        ldb((pr.tb ? pr.k : pr.n) + pr.pad),
        ldc(pr.n + pr.pad),
        sa(pr.bcast_a ? 0 : (pr.ta ? pr.k : pr.m) * lda),
        sb(pr.bcast_b ? 0 : (pr.tb ? pr.n : pr.k) * ldb),
        sc(pr.m * ldc),
        a(make(pr.in, size_t((pr.bcast_a ? 1 : pr.batch) * (pr.ta ? pr.k : pr.m) * lda), rng,
               pr.scale)),
        b(make(pr.in, size_t((pr.bcast_b ? 1 : pr.batch) * (pr.tb ? pr.n : pr.k) * ldb), rng,
               pr.scale)) {
    if (p.bias) {
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      bias.resize(size_t(p.n));
      for (auto& v : bias) v = dist(rng);
    }
    if (p.bias_rows) {
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      bias_rows.resize(size_t(p.m));
      for (auto& v : bias_rows) v = dist(rng);
    }
    ref.resize(size_t(p.batch * p.m * p.n));
    mag.resize(ref.size());
    std::vector<double> A(size_t(p.m * p.k)), B(size_t(p.k * p.n)), s(size_t(p.n)), mg(size_t(p.n));
    for (int64_t bi = 0; bi < p.batch; ++bi) {
      const float* Ab = a.vals.data() + bi * sa;
      const float* Bb = b.vals.data() + bi * sb;
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t kk = 0; kk < p.k; ++kk)
          A[size_t(i * p.k + kk)] = p.ta ? Ab[kk * lda + i] : Ab[i * lda + kk];
      for (int64_t kk = 0; kk < p.k; ++kk)
        for (int64_t j = 0; j < p.n; ++j)
          B[size_t(kk * p.n + j)] = p.tb ? Bb[j * ldb + kk] : Bb[kk * ldb + j];
      for (int64_t i = 0; i < p.m; ++i) {
        std::fill(s.begin(), s.end(), 0.0);
        std::fill(mg.begin(), mg.end(), 0.0);
        for (int64_t kk = 0; kk < p.k; ++kk) {
          const double av = A[size_t(i * p.k + kk)];
          const double* brow = B.data() + kk * p.n;
          for (int64_t j = 0; j < p.n; ++j) {
            s[size_t(j)] += av * brow[j];
            mg[size_t(j)] += std::fabs(av * brow[j]);
          }
        }
        for (int64_t j = 0; j < p.n; ++j) {
          const size_t idx = size_t((bi * p.m + i) * p.n + j);
          ref[idx] = s[size_t(j)] + (p.bias ? double(bias[size_t(j)]) : 0.0) +
                     (p.bias_rows ? double(bias_rows[size_t(i)]) : 0.0);
          mag[idx] = mg[size_t(j)];
        }
      }
    }
  }

  // Runs on isa with the given output dtype and activation; checks every element
  // against the reference, and that the padding of C is untouched. Returns C's bytes.
  std::vector<unsigned char> check(const char* isa, phx_dtype out, phx_activation act,
                                   ThreadPool& pool) const {
    const size_t c_elems = size_t(p.batch * sc);
    const float kSentinel = 1234.5f;
    std::vector<float> c32(out == PHX_DTYPE_F32 ? c_elems : 0, kSentinel);
    const uint16_t sentinel16 = 0x7bbb;
    std::vector<uint16_t> c16(out == PHX_DTYPE_F32 ? 0 : c_elems, sentinel16);

    GemmArgs g;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.batch = p.batch;
    g.in_dtype = p.in;
    g.a = a.data();
    g.lda = lda;
    g.batch_stride_a = sa;
    g.trans_a = p.ta;
    g.b = b.data();
    g.ldb = ldb;
    g.batch_stride_b = sb;
    g.trans_b = p.tb;
    g.out_dtype = out;
    g.c = out == PHX_DTYPE_F32 ? static_cast<void*>(c32.data()) : c16.data();
    g.ldc = ldc;
    g.batch_stride_c = sc;
    g.bias = p.bias ? bias.data() : nullptr;
    g.bias_rows = p.bias_rows ? bias_rows.data() : nullptr;
    g.activation = act;
    EXPECT_TRUE(gemm_with_isa(g, pool, isa)) << isa;

    const double half_ulp = out == PHX_DTYPE_BF16  ? 1.0 / 256
                            : out == PHX_DTYPE_F16 ? 1.0 / 2048
                                                   : 0.0;
    const double sub = out == PHX_DTYPE_F16 ? std::ldexp(1.0, -25) : 0.0;
    int failures = 0;
    for (int64_t bi = 0; bi < p.batch; ++bi) {
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < ldc; ++j) {
          const size_t ci = size_t(bi * sc + i * ldc + j);
          if (j >= p.n) {  // padding of C must stay as it was
            if (out == PHX_DTYPE_F32)
              EXPECT_EQ(c32[ci], kSentinel);
            else
              EXPECT_EQ(c16[ci], sentinel16);
            continue;
          }
          const size_t ri = size_t((bi * p.m + i) * p.n + j);
          const double pre = ref[ri];
          const double want = act_ref(pre, act);
          const double got = out == PHX_DTYPE_F32    ? double(c32[ci])
                             : out == PHX_DTYPE_BF16 ? double(bf16_to_f32(c16[ci]))
                                                     : double(f16_to_f32(c16[ci]));
          const double tol_pre =
              2.0 * double(p.k) * kU * mag[ri] + 2.0 * kU * std::fabs(pre) + 1e-30;
          const double tol_act =
              act == PHX_ACTIVATION_NONE ? tol_pre : 1.13 * tol_pre + 1e-5 * std::fabs(want);
          const double tol = tol_act + (std::fabs(want) + tol_act) * half_ulp + sub;
          if (!(std::fabs(got - want) <= tol)) {
            if (++failures <= 5)
              ADD_FAILURE() << isa << " out=" << int(out) << " act=" << act_name(act) << " "
                            << describe(p) << " at b=" << bi << " i=" << i << " j=" << j << ": got "
                            << got << " want " << want << " tol " << tol;
          }
        }
      }
    }
    EXPECT_EQ(failures, 0) << isa << " " << describe(p);
    const auto* bytes = static_cast<const unsigned char*>(g.c);
    return {bytes, bytes + c_elems * (out == PHX_DTYPE_F32 ? 4 : 2)};
  }
};

std::vector<const char*> isas() { return gemm_supported_isas(); }

const phx_dtype kInDtypes[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16};

// Every output dtype valid for an input dtype: f32 and the input's own.
std::vector<phx_dtype> outs_for(phx_dtype in) {
  if (in == PHX_DTYPE_F32) return {PHX_DTYPE_F32};
  return {PHX_DTYPE_F32, in};
}

// The arguments of C[m x n] = A[m x k] B[k x n], all f32, row-major and unpadded.
GemmArgs row_major_f32(int64_t m, int64_t n, int64_t k, const Buffer& a, const Buffer& b,
                       float* c) {
  GemmArgs g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.data();
  g.lda = k;
  g.b = b.data();
  g.ldb = n;
  g.c = c;
  g.ldc = n;
  return g;
}

TEST(Gemm, IsaNames) {
  const std::vector<const char*> names = isas();
  ASSERT_FALSE(names.empty());
  EXPECT_STREQ(names.back(), "generic");
  const std::string chosen = gemm_isa();
  bool found = false;
  for (const char* n : names) found |= chosen == n;
  EXPECT_TRUE(found) << chosen;
  ThreadPool pool(1);
  GemmArgs g;
  EXPECT_FALSE(gemm_with_isa(g, pool, "no-such-isa"));
}

// Odd shapes (1, 7, 127, 129, 1000, matrix-vector) with every transposition, dtype and
// output dtype, padded leading dimensions, and a bias.
TEST(Gemm, ShapesDtypesTransposes) {
  std::mt19937 rng(42);
  ThreadPool pool(2);
  const int64_t shapes[][3] = {{1, 1, 1},       {7, 7, 7},       {1, 7, 127},
                               {127, 129, 127}, {129, 127, 129}, {1, 129, 1000},
                               {33, 1000, 7},   {1000, 17, 129}, {7, 1, 1000}};
  for (const auto& s : shapes) {
    for (phx_dtype in : kInDtypes) {
      for (int t = 0; t < 4; ++t) {
        Problem p{s[0], s[1], s[2]};
        p.in = in;
        p.ta = t & 1;
        p.tb = t & 2;
        p.pad = (t == 3) ? 5 : (t == 1 ? 1 : 0);
        p.bias = t >= 2;
        Fixture f(p, rng);
        for (const char* isa : isas())
          for (phx_dtype out : outs_for(in)) f.check(isa, out, PHX_ACTIVATION_NONE, pool);
      }
    }
  }
}

// K spans several K blocks (so the epilogue must be applied once, at the last one);
// every activation, with and without a bias.
TEST(Gemm, ActivationsAcrossKBlocks) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (phx_dtype in : kInDtypes) {
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      Problem p{30, 200, 900};
      p.in = in;
      p.bias = with_bias;
      p.pad = 3;
      p.scale = 0.3f;  // pre-activations of a few units, where the activations bend
      Fixture f(p, rng);
      for (const char* isa : isas())
        for (phx_dtype out : outs_for(in))
          for (phx_activation act :
               {PHX_ACTIVATION_NONE, PHX_ACTIVATION_RELU, PHX_ACTIVATION_GELU, PHX_ACTIVATION_SILU})
            f.check(isa, out, act, pool);
    }
  }
}

// Large enough to be split across threads, to use several column blocks of B and
// (f32-layout paths, K block 384) several K blocks, and, for a 16-bit C on one thread,
// several row blocks of f32 scratch (1M floats / 1808 columns = 574 rows each).
TEST(Gemm, LargeThreaded) {
  std::mt19937 rng(3);
  ThreadPool pool(2), pool1(1);
  for (phx_dtype in : kInDtypes) {
    Problem p{600, 1800, 400};
    p.in = in;
    p.bias = true;
    Fixture f(p, rng);
    const std::vector<const char*> names = isas();
    // The portable path is checked on the smaller shapes; here the vector ones.
    for (const char* isa : names) {
      if (std::string(isa) == "generic" && names.size() > 1) continue;
      for (phx_dtype out : outs_for(in)) f.check(isa, out, PHX_ACTIVATION_GELU, pool);
      // One thread takes all 600 rows: more than one f32 scratch block of a 16-bit C.
      if (in != PHX_DTYPE_F32) f.check(isa, in, PHX_ACTIVATION_NONE, pool1);
    }
  }
  Problem tall{1500, 40, 20};  // more rows than one A block
  Fixture f(tall, rng);
  for (const char* isa : isas()) f.check(isa, PHX_DTYPE_F32, PHX_ACTIVATION_NONE, pool);
}

// Batches, with A or B broadcast (batch stride 0), on pools of 1, 2 and 3 threads.
TEST(Gemm, Batched) {
  std::mt19937 rng(11);
  for (unsigned threads : {1u, 2u, 3u}) {
    ThreadPool pool(threads);
    for (phx_dtype in : kInDtypes) {
      for (int mode = 0; mode < 3; ++mode) {
        Problem p{70, 90, 65};
        p.batch = mode == 0 ? 2 : 3;
        p.in = in;
        p.bcast_a = mode == 1;
        p.bcast_b = mode == 2;
        p.tb = mode == 2;
        p.bias = mode != 0;
        p.pad = 2;
        Fixture f(p, rng);
        for (const char* isa : isas())
          for (phx_dtype out : outs_for(in)) f.check(isa, out, PHX_ACTIVATION_SILU, pool);
      }
    }
  }
}

// A bias per row (an NCHW convolution's), alone and with the column bias, before every
// activation: tiles (several K blocks, edge tiles), the skinny path, batches, every input
// and output dtype, on every instruction set. The reference adds both biases; the
// tolerance is the one above (each bias is one more rounding of |s + bias| size).
TEST(Gemm, RowBiasBeforeTheActivation) {
  std::mt19937 rng(41);
  ThreadPool pool(2);
  const Problem shapes[] = {{37, 45, 300}, {5, 70, 33}, {16, 33, 9, 3}};
  for (Problem p : shapes)
    for (phx_dtype in : kInDtypes)
      for (int both = 0; both < 2; ++both) {
        p.in = in;
        p.bias_rows = true;
        p.bias = both;
        const Fixture f(p, rng);
        for (const char* isa : isas())
          for (phx_dtype out : outs_for(in))
            for (phx_activation act : {PHX_ACTIVATION_NONE, PHX_ACTIVATION_RELU,
                                       PHX_ACTIVATION_GELU, PHX_ACTIVATION_SILU})
              f.check(isa, out, act, pool);
      }
}

// K == 0: every element is act(bias) (or act(0)).
TEST(Gemm, EmptyK) {
  ThreadPool pool(2);
  std::mt19937 rng(5);
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    for (phx_dtype in : kInDtypes) {
      Problem p{5, 9, 0};
      p.batch = 2;
      p.in = in;
      p.bias = with_bias;
      p.pad = 1;
      Fixture f(p, rng);
      for (const char* isa : isas())
        for (phx_dtype out : outs_for(in))
          for (phx_activation act : {PHX_ACTIVATION_NONE, PHX_ACTIVATION_GELU})
            f.check(isa, out, act, pool);
    }
  }
}

// The skinny path (up to gemm_skinny_max_rows() rows, and one row past it, on the packed
// path): both layouts of B, a transposed A, every dtype, bias with every activation, odd
// N and K (the column tails of the vector kernels, the tails of their passes of 4 ks;
// several column blocks, several tiles of a transposed or 16-bit B), padded leading
// dimensions.
TEST(Gemm, SkinnyRows) {
  std::mt19937 rng(13);
  ThreadPool pool(2);
  const int64_t top = gemm_skinny_max_rows();
  ASSERT_GE(top, 1);
  const int64_t nk[][2] = {{1, 1}, {17, 3}, {129, 1000}, {1000, 129}, {2049, 517}};
  for (int64_t m : {int64_t{1}, std::min<int64_t>(3, top), top, top + 1}) {
    for (const auto& s : nk) {
      for (phx_dtype in : kInDtypes) {
        for (int t = 0; t < 4; ++t) {
          Problem p{m, s[0], s[1]};
          p.in = in;
          p.ta = t & 1;
          p.tb = t & 2;
          p.pad = t == 3 ? 5 : t;
          p.bias = t != 0;
          p.scale = 0.3f;
          Fixture f(p, rng);
          for (const char* isa : isas())
            for (phx_dtype out : outs_for(in))
              for (phx_activation act : {PHX_ACTIVATION_NONE, PHX_ACTIVATION_RELU,
                                         PHX_ACTIVATION_GELU, PHX_ACTIVATION_SILU})
                f.check(isa, out, act, pool);
        }
      }
    }
  }
}

// Skinny batches, A or B broadcast, on 1 and 3 threads (the columns split unevenly).
TEST(Gemm, SkinnyBatched) {
  std::mt19937 rng(17);
  for (unsigned threads : {1u, 3u}) {
    ThreadPool pool(threads);
    for (phx_dtype in : kInDtypes) {
      for (int mode = 0; mode < 3; ++mode) {
        Problem p{std::min<int64_t>(2, gemm_skinny_max_rows()), 300, 700};
        p.batch = mode == 0 ? 2 : 3;
        p.in = in;
        p.bcast_a = mode == 1;
        p.bcast_b = mode == 2;
        p.tb = mode == 1;
        p.bias = mode != 0;
        p.pad = 1;
        Fixture f(p, rng);
        for (const char* isa : isas())
          for (phx_dtype out : outs_for(in)) f.check(isa, out, PHX_ACTIVATION_SILU, pool);
      }
    }
  }
}

// The number of threads changes no bit of C: the rows (or columns) each thread takes, and
// so the blocks it packs them in, leave every element the same chain of K blocks.
TEST(Gemm, ThreadCountChangesNoBit) {
  std::mt19937 rng(23);
  Problem p{230, 1100, 700};
  p.bias = true;
  Fixture f(p, rng);
  ThreadPool pool1(1), pool2(2), pool3(3);
  const std::vector<const char*> names = isas();
  for (const char* isa : names) {
    if (std::string(isa) == "generic" && names.size() > 1)
      continue;  // slow; the small shapes check it
    const std::vector<unsigned char> one = f.check(isa, PHX_DTYPE_F32, PHX_ACTIVATION_GELU, pool1);
    EXPECT_TRUE(one == f.check(isa, PHX_DTYPE_F32, PHX_ACTIVATION_GELU, pool2)) << isa;
    EXPECT_TRUE(one == f.check(isa, PHX_DTYPE_F32, PHX_ACTIVATION_GELU, pool3)) << isa;
  }
}

// A product on a PackedB has the bits of the same product on B itself (executables pack
// their constant weights, eager ops do not, and the two must agree): for skinny products,
// whose chains read the panels in the order they read B, and packed ones alike. Both
// layouts of B; K over several K blocks; N not a multiple of any panel width; a batch of
// A against the one B; bias and activation.
TEST(Gemm, PackedBMatchesUnpacked) {
  std::mt19937 rng(19);
  ThreadPool pool(2);
  const int64_t top = gemm_skinny_max_rows();
  // 240 rows of one matrix: the rows split over 2 threads, both on the one PackedB.
  for (int64_t m : {int64_t{1}, top, top + 1, int64_t{40}, int64_t{240}}) {
    for (int tb = 0; tb < 2; ++tb) {
      const int64_t n = 1001, k = 900, batch = m == 240 ? 1 : 2;
      Buffer a(PHX_DTYPE_F32, size_t(batch * m * k), rng), b(PHX_DTYPE_F32, size_t(k * n), rng);
      std::vector<float> bias(size_t(n), 0.25f);
      std::vector<float> c1(size_t(batch * m * n)), c2(c1.size(), -1.0f);
      GemmArgs g;
      g.m = m;
      g.n = n;
      g.k = k;
      g.batch = batch;
      g.a = a.data();
      g.lda = k;
      g.batch_stride_a = m * k;
      g.b = b.data();
      g.trans_b = tb;
      g.ldb = tb ? k : n;
      g.c = c1.data();
      g.ldc = n;
      g.batch_stride_c = m * n;
      g.bias = bias.data();
      g.activation = PHX_ACTIVATION_GELU;
      gemm(g, pool);
      const PackedB packed = gemm_pack_b(g);
      g.c = c2.data();
      gemm(g, packed, pool);
      EXPECT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)))
          << "m=" << m << " trans_b=" << tb;
    }
  }
}

// With k_pass every element is the passes' chain (gemm.h), here formed with one FMA per k:
// a skinny product too (the skinny path is never taken with k_pass), and one of 240 rows,
// split over the threads. The portable path is left out: without FMA in its baseline it
// rounds every product before adding it.
TEST(Gemm, KPassOnSkinnyAndSplitShapes) {
  std::mt19937 rng(23);
  ThreadPool pool(2);
  const int64_t n = 300, k = 700, depth = 128;
  for (int64_t m : {int64_t{1}, int64_t{240}}) {
    Buffer a(PHX_DTYPE_F32, size_t(m * k), rng), b(PHX_DTYPE_F32, size_t(k * n), rng);
    std::vector<float> want(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t k0 = 0; k0 < k; k0 += depth) {
          float pass = 0.0f;
          for (int64_t kk = k0; kk < std::min(k, k0 + depth); ++kk)
            pass = std::fma(a.vals[size_t(i * k + kk)], b.vals[size_t(kk * n + j)], pass);
          acc = k0 == 0 ? pass : acc + pass;
        }
        want[size_t(i * n + j)] = acc;
      }
    for (const char* isa : isas()) {
      if (std::string(isa) == "generic") continue;
      std::vector<float> c(size_t(m * n));
      GemmArgs g = row_major_f32(m, n, k, a, b, c.data());
      g.k_pass = depth;
      ASSERT_TRUE(gemm_with_isa(g, pool, isa));
      EXPECT_EQ(0, std::memcmp(want.data(), c.data(), c.size() * sizeof(float)))
          << isa << " m=" << m;
    }
  }
}

// gemm() runs the ISA gemm_isa() names, bit for bit.
TEST(Gemm, DefaultMatchesChosenIsa) {
  std::mt19937 rng(9);
  ThreadPool pool(2);
  const int64_t m = 50, n = 70, k = 300;
  Buffer a(PHX_DTYPE_F32, size_t(m * k), rng), b(PHX_DTYPE_F32, size_t(k * n), rng);
  std::vector<float> c1(size_t(m * n)), c2(size_t(m * n));
  GemmArgs g = row_major_f32(m, n, k, a, b, c1.data());
  g.activation = PHX_ACTIVATION_GELU;
  gemm(g, pool);
  g.c = c2.data();
  ASSERT_TRUE(gemm_with_isa(g, pool, gemm_isa()));
  EXPECT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)));
}

// gemm_isa() follows PHX_CPU_ISA, which the forced_isa ctest entries set: a cap takes the
// best path at or below it that the machine has; avx512-bf16 is taken when asked for and
// present, and otherwise only where gemm_bf16_dot_pays(); without the variable (or with
// an unknown value) the best path.
TEST(Gemm, PhxCpuIsaCapsTheChoice) {
  const std::vector<const char*> names = isas();
  auto has = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const std::vector<std::string> ranked = {"generic", "avx2", "avx512", "avx512-bf16"};
  const char* env = std::getenv("PHX_CPU_ISA");
  const std::string asked = env != nullptr ? env : "";
  std::string want;
  if (asked == "avx512-bf16" && has(asked)) {
    want = asked;
  } else {
    auto cap = std::find(ranked.begin(), ranked.end(), asked);
    const size_t top = cap == ranked.end() ? ranked.size() - 1 : size_t(cap - ranked.begin());
    for (size_t r = 0; r <= top; ++r)
      if (has(ranked[r]) && (ranked[r] != "avx512-bf16" || gemm_bf16_dot_pays())) want = ranked[r];
  }
  EXPECT_EQ(want, gemm_isa()) << "PHX_CPU_ISA=" << asked;
}

}  // namespace
}  // namespace phx::kernels
