// Float64 references of the f16 ops a model runs on the NPU, each with a bound on how far
// the NPU's result may be from it: a running error analysis, element by element.
//
// Ref::v is the exact result of the model on its inputs; Ref::e bounds |npu - v|. With
// u = 2^-11 (f16's unit roundoff) and 2^-24 (f32's):
//   - every f16 store rounds once: e' = e + u (|v| + e) + 2^-25 (half the smallest f16
//     subnormal, the largest error of rounding a tiny value);
//   - the op's own f32 arithmetic adds the host kernels' bounds (tests/op_suite.h and
//     docs/ops.md): 2 K 2^-24 S for a sum of K products with S = sum |a_k b_k| (+|bias|);
//     (n + 32) 2^-24 |y| (+1e-7 softmax, +1e-6 rms_norm) for a row of n; 8 2^-24 |y| +
//     1e-6 max(1, |x|) for gelu and silu; 3 2^-23 (|a| + |b|)(|c| + |s|) for a rotation;
//     ((3 Skv + 32) + 4 (D + 2) A) 2^-23 sum_j p_j |v_j| for attention (docs/ops.md's
//     bound in ulps of f32, an ulp taken as 2^-23);
//   - the errors of the inputs pass through the op: exactly for sums and products
//     (|a| e_b + |b| e_a + e_a e_b), through the Lipschitz constant for gelu (1.13) and
//     silu (1.1), as exp(2 E) - 1 relative for a softmax whose logits are off by up to E
//     (each p_j moves by a factor within exp(+-2E)), and to first order for rms_norm,
//     taken 5% wider to cover its second-order terms (the inputs' errors are below 1% of
//     their values there).
// The magnitudes in S and the like use |v| + e, so that they bound the NPU's own values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

namespace npu_sim_test {

struct Ref {
  std::vector<int64_t> shape;
  std::vector<double> v;  // float64 result
  std::vector<double> e;  // bound on |npu - v|

  size_t size() const { return v.size(); }
  double mag(size_t i) const { return std::fabs(v[i]) + e[i]; }
};

inline int64_t count(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

inline Ref zeros(std::vector<int64_t> shape) {
  const auto n = static_cast<size_t>(count(shape));
  return {std::move(shape), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
}

// Inputs the NPU holds exactly (f16 weights, f32 tables and activations).
inline Ref exact(std::vector<int64_t> shape, std::vector<double> values) {
  Ref r{std::move(shape), std::move(values), {}};
  r.e.assign(r.v.size(), 0.0);
  return r;
}

inline Ref stored_f16(Ref r) {
  for (size_t i = 0; i < r.size(); ++i) r.e[i] += 0x1p-11 * r.mag(i) + 0x1p-25;
  return r;
}

// a [..., M, K] . b [..., K, N] + bias [N], the batch dimensions broadcast; stored in f16.
inline Ref matmul(const Ref& a, const Ref& b, const Ref* bias) {
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  auto batch = [rank](const std::vector<int64_t>& s) {
    std::vector<int64_t> dims(rank - s.size(), 1);
    dims.insert(dims.end(), s.begin(), s.end() - 2);
    return dims;
  };
  const std::vector<int64_t> ab = batch(a.shape), bb = batch(b.shape);
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  std::vector<int64_t> shape(rank);
  for (size_t i = 0; i + 2 < rank; ++i) shape[i] = std::max(ab[i], bb[i]);
  shape[rank - 2] = m;
  shape[rank - 1] = n;
  Ref out = zeros(shape);
  const int64_t batches = count(shape) / (m * n);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t rest = t, a_off = 0, b_off = 0, stride_a = 1, stride_b = 1;
    for (size_t i = rank - 2; i-- > 0;) {  // the batch index, last dimension first
      const int64_t index = rest % shape[i];
      rest /= shape[i];
      a_off += (ab[i] == 1 ? 0 : index) * stride_a;
      b_off += (bb[i] == 1 ? 0 : index) * stride_b;
      stride_a *= ab[i];
      stride_b *= bb[i];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, err = 0, abs_sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          const auto x = static_cast<size_t>(a_off * m * k + i * k + p);
          const auto y = static_cast<size_t>(b_off * k * n + p * n + j);
          sum += a.v[x] * b.v[y];
          err += std::fabs(a.v[x]) * b.e[y] + std::fabs(b.v[y]) * a.e[x] + a.e[x] * b.e[y];
          abs_sum += a.mag(x) * b.mag(y);
        }
        if (bias != nullptr) {
          sum += bias->v[size_t(j)];
          err += bias->e[size_t(j)];
          abs_sum += bias->mag(size_t(j));
        }
        const auto o = static_cast<size_t>((t * m + i) * n + j);
        out.v[o] = sum;
        out.e[o] = err + 2.0 * double(k) * 0x1p-24 * abs_sum;
      }
    }
  }
  return stored_f16(out);
}

inline double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double silu(double x) { return x / (1.0 + std::exp(-x)); }

// f (gelu or silu) with Lipschitz constant lipschitz, elementwise; stored in f16.
inline Ref activation(const Ref& x, double (*f)(double), double lipschitz) {
  Ref out = zeros(x.shape);
  for (size_t i = 0; i < x.size(); ++i) {
    out.v[i] = f(x.v[i]);
    out.e[i] = lipschitz * x.e[i] + 8 * 0x1p-24 * (std::fabs(out.v[i]) + lipschitz * x.e[i]) +
               1e-6 * std::max(1.0, x.mag(i));
  }
  return stored_f16(out);
}

// a + b or a * b of one shape; stored in f16.
inline Ref add(const Ref& a, const Ref& b) {
  Ref out = zeros(a.shape);
  for (size_t i = 0; i < a.size(); ++i) {
    out.v[i] = a.v[i] + b.v[i];
    out.e[i] = a.e[i] + b.e[i] + 0x1p-24 * (a.mag(i) + b.mag(i));
  }
  return stored_f16(out);
}

inline Ref mul(const Ref& a, const Ref& b) {
  Ref out = zeros(a.shape);
  for (size_t i = 0; i < a.size(); ++i) {
    out.v[i] = a.v[i] * b.v[i];
    out.e[i] = std::fabs(a.v[i]) * b.e[i] + std::fabs(b.v[i]) * a.e[i] + a.e[i] * b.e[i] +
               0x1p-24 * a.mag(i) * b.mag(i);
  }
  return stored_f16(out);
}

// x / sqrt(mean(x^2) + epsilon) * gamma over the last dimension; stored in f16.
inline Ref rms_norm(const Ref& x, const Ref& gamma, double epsilon) {
  const auto d = static_cast<size_t>(x.shape.back());
  Ref out = zeros(x.shape);
  for (size_t row = 0; row < x.size() / d; ++row) {
    const size_t base = row * d;
    double squares = 0, weighted_error = 0;
    for (size_t j = 0; j < d; ++j) {
      squares += x.v[base + j] * x.v[base + j];
      weighted_error += std::fabs(x.v[base + j]) * x.e[base + j];
    }
    const double r = std::sqrt(squares / double(d) + epsilon);
    for (size_t j = 0; j < d; ++j) {
      const size_t i = base + j;
      out.v[i] = x.v[i] * gamma.v[j] / r;
      // dy_i = g_i (dx_i / r - x_i sum_j x_j dx_j / (d r^3)).
      const double carried =
          std::fabs(gamma.v[j]) *
          (x.e[i] / r + std::fabs(x.v[i]) * weighted_error / (double(d) * r * r * r));
      out.e[i] = 1.05 * carried + (double(d) + 32) * 0x1p-24 * std::fabs(out.v[i]) + 1e-6;
    }
  }
  return stored_f16(out);
}

// Rotary embedding of x [..., S, D] in pairs (i, i + D / 2) by the f32 tables cos and
// sin [S, D / 2]; stored in f16.
inline Ref rope(const Ref& x, const std::vector<double>& cos, const std::vector<double>& sin) {
  const auto d = static_cast<size_t>(x.shape.back());
  const auto s = static_cast<size_t>(x.shape[x.shape.size() - 2]), half = d / 2;
  Ref out = zeros(x.shape);
  for (size_t row = 0; row < x.size() / d; ++row) {
    const size_t base = row * d, pos = row % s;
    for (size_t i = 0; i < half; ++i) {
      const size_t ia = base + i, ib = base + i + half;
      const double c = cos[pos * half + i], sn = sin[pos * half + i];
      const double f32 = 3 * 0x1p-23 *
                         (x.mag(ia) * std::fabs(c) + x.mag(ib) * std::fabs(sn) +
                          x.mag(ia) * std::fabs(sn) + x.mag(ib) * std::fabs(c));
      out.v[ia] = x.v[ia] * c - x.v[ib] * sn;
      out.v[ib] = x.v[ia] * sn + x.v[ib] * c;
      out.e[ia] = std::fabs(c) * x.e[ia] + std::fabs(sn) * x.e[ib] + f32;
      out.e[ib] = std::fabs(sn) * x.e[ia] + std::fabs(c) * x.e[ib] + f32;
    }
  }
  return stored_f16(out);
}

// The softmax of logits l (errors e) over n entries into p (errors pe): each p_j moves by
// a factor within exp(+-2E), E = max e, plus the f32 softmax's own error.
inline void softmax_row(const double* l, const double* e, size_t n, double* p, double* pe) {
  double mx = -INFINITY, sum = 0, worst = 0;
  for (size_t j = 0; j < n; ++j) mx = std::max(mx, l[j]);
  for (size_t j = 0; j < n; ++j) sum += std::exp(l[j] - mx);
  for (size_t j = 0; j < n; ++j) worst = std::max(worst, e[j]);
  for (size_t j = 0; j < n; ++j) {
    p[j] = std::exp(l[j] - mx) / sum;
    pe[j] = p[j] * std::expm1(2 * worst) + (double(n) + 32) * 0x1p-24 * p[j] + 1e-7;
  }
}

inline Ref softmax(const Ref& x) {
  const auto n = static_cast<size_t>(x.shape.back());
  Ref out = zeros(x.shape);
  for (size_t row = 0; row < x.size() / n; ++row)
    softmax_row(&x.v[row * n], &x.e[row * n], n, &out.v[row * n], &out.e[row * n]);
  return stored_f16(out);
}

// Causal attention of q, k, v [B, H, S, D] (as many key/value heads as query heads),
// scale 1 / sqrt(D); stored in f16.
inline Ref causal_attention(const Ref& q, const Ref& k, const Ref& v) {
  const auto s = static_cast<size_t>(q.shape[2]), d = static_cast<size_t>(q.shape[3]);
  const double scale = 1.0 / std::sqrt(double(d));
  Ref out = zeros(q.shape);
  std::vector<double> l(s), le(s), p(s), pe(s);
  for (size_t head = 0; head < q.size() / (s * d); ++head) {
    const size_t base = head * s * d;
    for (size_t i = 0; i < s; ++i) {
      const size_t seen = i + 1;  // keys 0..i
      double largest = 0;         // A of the f32 bound
      for (size_t j = 0; j < seen; ++j) {
        double dot = 0, err = 0, abs_dot = 0;
        for (size_t c = 0; c < d; ++c) {
          const size_t qi = base + i * d + c, kj = base + j * d + c;
          dot += q.v[qi] * k.v[kj];
          err += std::fabs(q.v[qi]) * k.e[kj] + std::fabs(k.v[kj]) * q.e[qi] + q.e[qi] * k.e[kj];
          abs_dot += q.mag(qi) * k.mag(kj);
        }
        l[j] = scale * dot;
        le[j] = scale * err;
        largest = std::max(largest, scale * abs_dot);
      }
      softmax_row(l.data(), le.data(), seen, p.data(), pe.data());
      for (size_t c = 0; c < d; ++c) {
        double sum = 0, err = 0, weighted = 0;
        for (size_t j = 0; j < seen; ++j) {
          const size_t vj = base + j * d + c;
          sum += p[j] * v.v[vj];
          err += pe[j] * v.mag(vj) + p[j] * v.e[vj];
          weighted += p[j] * v.mag(vj);
        }
        const size_t o = base + i * d + c;
        out.v[o] = sum;
        out.e[o] =
            err + ((3.0 * double(s) + 32) + 4.0 * (double(d) + 2) * largest) * 0x1p-23 * weighted;
      }
    }
  }
  return stored_f16(out);
}

// The sum over dimension 1 of x [B, H, S, D] into [B, S, D]; stored in f16.
inline Ref reduce_sum_dim1(const Ref& x) {
  const int64_t b = x.shape[0], h = x.shape[1], inner = x.shape[2] * x.shape[3];
  Ref out = zeros({b, x.shape[2], x.shape[3]});
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      double sum = 0, err = 0, abs_sum = 0;
      for (int64_t k = 0; k < h; ++k) {
        const auto at = static_cast<size_t>((i * h + k) * inner + j);
        sum += x.v[at];
        err += x.e[at];
        abs_sum += x.mag(at);
      }
      const auto o = static_cast<size_t>(i * inner + j);
      out.v[o] = sum;
      out.e[o] = err + (double(h) + 2) * 0x1p-24 * abs_sum;
    }
  }
  return stored_f16(out);
}

}  // namespace npu_sim_test
