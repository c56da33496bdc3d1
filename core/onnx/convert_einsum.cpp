// Einsum as the ops of a tensor contraction: a label repeated in one operand becomes its
// diagonal (a mask and a sum), a label no other operand or the output names is summed
// away at once, and the operands are contracted left to right, each pair as one batched
// matmul between transposes and reshapes (the batch labels kept as dimensions, so that
// sizes of 1 broadcast as NumPy's einsum does).
#include <algorithm>
#include <cctype>

#include "attributes.h"
#include "converters.h"

namespace phx::onnx_import {
namespace {

// An operand: its graph value and the label of each dimension. Labels are the
// equation's letters; the dimensions an ellipsis covers get labels '0', '1', ... counted
// from the right, so that ellipses of different ranks line up as broadcasting does.
struct Term {
  phx_value value;
  std::string labels;
  std::vector<int64_t> dims;
};

class Einsum {
 public:
  Einsum(Importer& im, const onnx::NodeProto& node) : im_(im), node_(node) {}

  void convert() {
    std::string equation;
    for (char c : attr_equation())
      if (c != ' ') equation += c;
    const size_t arrow = equation.find("->");
    const std::string inputs = equation.substr(0, arrow);
    std::vector<std::string> operands(1);
    for (char c : inputs) {
      if (c == ',')
        operands.emplace_back();
      else
        operands.back().push_back(c);
    }
    if (static_cast<int>(operands.size()) != node_.input_size())
      im_.invalid(node_, "the equation names " + std::to_string(operands.size()) +
                             " operands for " + std::to_string(node_.input_size()) + " inputs");
    std::vector<Term> terms;
    for (size_t i = 0; i < operands.size(); ++i)
      terms.push_back(term(operands[i], static_cast<int>(i)));
    const std::string output = arrow == std::string::npos ? implicit_output(terms)
                                                          : expand(equation.substr(arrow + 2), -1);
    for (char c : output) {
      if (std::count(output.begin(), output.end(), c) != 1)
        im_.invalid(node_, "the output names a label twice");
      if (std::none_of(terms.begin(), terms.end(),
                       [&](const Term& t) { return t.labels.find(c) != std::string::npos; }))
        im_.invalid(node_, "the output names a label no operand has");
    }
    for (Term& t : terms) take_diagonals(t);
    Term acc = terms[0];
    for (size_t i = 1; i <= terms.size(); ++i) {
      // The labels still needed after this step: the output's and the later operands'.
      std::string needed = output;
      for (size_t j = i + 1; j < terms.size(); ++j) needed += terms[j].labels;
      if (i < terms.size()) {
        std::string needed_by_pair = needed + terms[i].labels;
        sum_away(acc, needed_by_pair);
        sum_away(terms[i], needed + acc.labels);
        acc = contract(acc, terms[i], needed);
      } else {
        sum_away(acc, needed);
      }
    }
    if (output.empty()) {  // a scalar: the sum of everything, [1] until here
      im_.define(node_, 0, reshape_to(im_, node_, acc.value, {}, nullptr),
                 im_.input(node_, 0).elem_type);
      return;
    }
    std::vector<uint32_t> perm;
    for (char c : output) perm.push_back(static_cast<uint32_t>(acc.labels.find(c)));
    im_.define(node_, 0, permuted(acc, perm, nullptr).value, im_.input(node_, 0).elem_type);
  }

 private:
  std::string attr_equation() const {
    const onnx::AttributeProto* a = find_attribute(node_, "equation");
    if (a == nullptr) im_.invalid(node_, "the equation attribute is missing");
    return a->s();
  }

  // The labels of an operand (input >= 0) or of the output (-1) with its ellipsis, if
  // any, written out.
  std::string expand(const std::string& spec, int input) {
    const size_t dots = spec.find("...");
    std::string letters = spec;
    if (dots != std::string::npos) letters.erase(dots, 3);
    for (char c : letters)
      if (!std::isalpha(static_cast<unsigned char>(c)))
        im_.invalid(node_, std::string("'") + c + "' in the equation is not a letter");
    if (dots == std::string::npos) return letters;
    if (spec.find("...", dots + 3) != std::string::npos)
      im_.invalid(node_, "an operand with two ellipses");
    size_t covered = ellipsis_rank_;
    if (input >= 0) {
      const uint32_t rank = im_.info(im_.graph_input(node_, input)).rank;
      if (rank < letters.size()) im_.invalid(node_, "an operand has fewer dimensions than labels");
      covered = rank - letters.size();
      ellipsis_rank_ = std::max(ellipsis_rank_, covered);
    }
    std::string dims;
    for (size_t i = covered; i-- > 0;) dims += static_cast<char>('0' + i);
    return letters.substr(0, dots) + dims + letters.substr(dots);
  }

  Term term(const std::string& spec, int input) {
    Term t;
    t.value = im_.graph_input(node_, input);
    const phx_value_info vi = im_.info(t.value);
    if (vi.dtype != PHX_DTYPE_F32 && vi.dtype != PHX_DTYPE_F16 && vi.dtype != PHX_DTYPE_BF16)
      im_.unsupported(node_, "Einsum of integers (only of floats)");
    t.labels = expand(spec, input);
    if (t.labels.size() != vi.rank)
      im_.invalid(node_, "operand " + std::to_string(input) + " has " + std::to_string(vi.rank) +
                             " dimensions for " + std::to_string(t.labels.size()) + " labels");
    t.dims.assign(vi.shape, vi.shape + vi.rank);
    if (std::find(t.dims.begin(), t.dims.end(), PHX_DIM_DYNAMIC) != t.dims.end())
      im_.needs_sizes(node_, "Einsum over a dynamic dimension");
    return t;
  }

  // Without "->": the ellipsis's labels, then the letters named once, alphabetically.
  std::string implicit_output(const std::vector<Term>& terms) const {
    std::string all, out;
    for (const Term& t : terms) all += t.labels;
    for (size_t i = ellipsis_rank_; i-- > 0;) out += static_cast<char>('0' + i);
    std::string letters;
    for (char c : all)
      if (std::isalpha(static_cast<unsigned char>(c)) && std::count(all.begin(), all.end(), c) == 1)
        letters += c;
    std::sort(letters.begin(), letters.end());
    return out + letters;
  }

  phx_value add(phx_op_id id, const void* params, const std::vector<phx_value>& inputs,
                const char* suffix) {
    return im_.add_node(node_, id, params, inputs, 1, {}, suffix)[0];
  }

  // t with its dimensions in the order perm names (skipped when it is the identity).
  Term permuted(const Term& t, const std::vector<uint32_t>& perm, const char* suffix) {
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == i;
    Term out;
    for (uint32_t p : perm) {
      out.labels += t.labels[p];
      out.dims.push_back(t.dims[p]);
    }
    if (identity) {
      out.value = t.value;
      return out;
    }
    phx_transpose_params params{};
    params.struct_size = sizeof params;
    std::copy(perm.begin(), perm.end(), params.perm);
    out.value = add(PHX_OP_TRANSPOSE, &params, {t.value}, suffix);
    return out;
  }

  // v in the shape dims (v itself when it has it).
  phx_value reshaped(phx_value v, const std::vector<int64_t>& dims, const char* suffix) {
    const phx_value_info vi = im_.info(v);
    if (std::equal(dims.begin(), dims.end(), vi.shape, vi.shape + vi.rank)) return v;
    return reshape_to(im_, node_, v, dims, suffix);
  }

  // A label named twice in t: the diagonal, as t times an identity mask over the two
  // dimensions, summed over the second.
  void take_diagonals(Term& t) {
    for (size_t q = 0; q < t.labels.size(); ++q) {
      const size_t p = t.labels.find(t.labels[q]);
      if (p == q) continue;
      if (t.dims[p] != t.dims[q]) im_.invalid(node_, "a repeated label of two sizes");
      const int64_t n = t.dims[p];
      if (n > 2048) im_.unsupported(node_, "a diagonal of more than 2048 elements");
      std::vector<int64_t> mask_dims(t.dims.size(), 1);
      mask_dims[p] = mask_dims[q] = n;
      KnownValue eye;
      eye.elem_type = onnx::TensorProto::FLOAT;
      eye.dims = mask_dims;
      eye.reals.assign(static_cast<size_t>(n * n), 0.0);
      for (int64_t i = 0; i < n; ++i) eye.reals[static_cast<size_t>(i * n + i)] = 1.0;
      phx_value mask = im_.constant(eye, node_.name() + " diagonal mask");
      const phx_dtype dtype = im_.info(t.value).dtype;
      if (dtype != PHX_DTYPE_F32)
        mask = im_.add_node(node_, PHX_OP_CAST, nullptr, {mask}, 1, {dtype}, "diagonal mask")[0];
      const phx_value masked = add(PHX_OP_MUL, nullptr, {t.value, mask}, "diagonal");
      phx_reduce_params params = PHX_REDUCE_PARAMS_INIT;
      params.axes_mask = 1u << q;
      t.value = add(PHX_OP_REDUCE_SUM, &params, {masked}, "diagonal sum");
      t.labels.erase(q, 1);
      t.dims.erase(t.dims.begin() + static_cast<std::ptrdiff_t>(q));
      --q;
    }
  }

  // Sums t over the labels needed does not name.
  void sum_away(Term& t, const std::string& needed) {
    phx_reduce_params params = PHX_REDUCE_PARAMS_INIT;
    Term out;
    for (size_t i = 0; i < t.labels.size(); ++i) {
      if (needed.find(t.labels[i]) == std::string::npos) {
        params.axes_mask |= 1u << i;
      } else {
        out.labels += t.labels[i];
        out.dims.push_back(t.dims[i]);
      }
    }
    if (params.axes_mask == 0) return;
    if (out.labels.empty()) {  // a sum of everything: kept as [1]
      params.keep_dims = 1;
      out.value = reshaped(add(PHX_OP_REDUCE_SUM, &params, {t.value}, "sum"), {1}, "sum as [1]");
      out.labels = "#";  // a label of size 1 that nothing else names
      out.dims = {1};
      t = out;
      return;
    }
    out.value = add(PHX_OP_REDUCE_SUM, &params, {t.value}, "sum");
    t = out;
  }

  // a and b contracted over the labels both hold that needed does not name: a as
  // [batch.., M, K], b as [batch.., K, N], one matmul, then [batch.., left.., right..].
  Term contract(const Term& a, const Term& b, const std::string& needed) {
    std::string batch, summed, left, right;
    for (char c : a.labels) {
      if (b.labels.find(c) == std::string::npos)
        left += c;
      else
        (needed.find(c) == std::string::npos ? summed : batch) += c;
    }
    for (char c : b.labels)
      if (a.labels.find(c) == std::string::npos) right += c;
    auto size = [](const Term& t, char c) { return t.dims[t.labels.find(c)]; };
    std::vector<int64_t> batch_dims_a, batch_dims_b, batch_dims;
    for (char c : batch) {
      const int64_t x = size(a, c), y = size(b, c);
      if (x != y && x != 1 && y != 1) im_.invalid(node_, "a label of two sizes");
      batch_dims_a.push_back(x);
      batch_dims_b.push_back(y);
      batch_dims.push_back(std::max(x, y));
    }
    int64_t m = 1, k = 1, n = 1;
    for (char c : left) m *= size(a, c);
    for (char c : right) n *= size(b, c);
    for (char c : summed) {
      if (size(a, c) != size(b, c)) im_.invalid(node_, "a summed label of two sizes");
      k *= size(a, c);
    }
    if (batch.size() + 2 > PHX_MAX_RANK) im_.unsupported(node_, "more than 6 batch labels");
    // a as [batch, left, summed] or [batch, summed, left] (transpose_a), whichever it
    // already is; b likewise.
    phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
    const phx_value a_in = arranged(a, batch, left, summed, batch_dims_a, m, k, params.transpose_a);
    const phx_value b_in =
        arranged(b, batch, summed, right, batch_dims_b, k, n, params.transpose_b);
    Term out;
    out.value = add(PHX_OP_MATMUL, &params, {a_in, b_in}, "product");
    out.labels = batch + left + right;
    out.dims = batch_dims;
    for (char c : left) out.dims.push_back(size(a, c));
    for (char c : right) out.dims.push_back(size(b, c));
    if (out.dims.size() > PHX_MAX_RANK) im_.unsupported(node_, "a result of rank above 8");
    out.value = reshaped(out.value, out.dims, "product dims");
    return out;
  }

  // t as [batch.., rows, columns] of the labels named, or [batch.., columns, rows] with
  // transposed set when t's dimensions are already in that order.
  phx_value arranged(const Term& t, const std::string& batch, const std::string& row_labels,
                     const std::string& column_labels, std::vector<int64_t> dims, int64_t rows,
                     int64_t columns, int& transposed) {
    const std::string straight = batch + row_labels + column_labels;
    const std::string swapped = batch + column_labels + row_labels;
    transposed = t.labels == swapped && t.labels != straight;
    std::vector<uint32_t> perm;
    for (char c : transposed ? swapped : straight)
      perm.push_back(static_cast<uint32_t>(t.labels.find(c)));
    const Term ordered = permuted(t, perm, "arranged");
    dims.push_back(transposed ? columns : rows);
    dims.push_back(transposed ? rows : columns);
    return reshaped(ordered.value, dims, "as matrices");
  }

  Importer& im_;
  const onnx::NodeProto& node_;
  size_t ellipsis_rank_ = 0;
};

}  // namespace

void convert_einsum(Importer& im, const onnx::NodeProto& node) { Einsum(im, node).convert(); }

}  // namespace phx::onnx_import
