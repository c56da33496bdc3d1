// LSTM, GRU and RNN unrolled over their time steps (the sequence length must be static):
// per direction, one matmul projects every step's input at once (X W^T + the biases);
// each step then adds H R^T (the projection as the matmul's bias), splits the gates and
// applies the cell's equations as ONNX writes them. A missing initial state is zero:
// the first step leaves out its products, and the batch may stay dynamic. sequence_lens
// masks each step: past a sequence's end its state is kept and its output is zero.
#include <algorithm>
#include <cmath>
#include <limits>

#include "attributes.h"
#include "converters.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

enum class Cell { kLstm, kGru, kRnn };

// An activation of the activations attribute with its alpha and beta.
struct Activation {
  std::string name;
  float alpha = 0.0f;
  float beta = 0.0f;
};

class Recurrence {
 public:
  Recurrence(Importer& im, const onnx::NodeProto& node, Cell cell)
      : im_(im), node_(node), cell_(cell) {}

  void convert() {
    gates_ = cell_ == Cell::kLstm ? 4 : cell_ == Cell::kGru ? 3 : 1;
    read_attributes();
    phx_value x = im_.graph_input(node_, 0);
    phx_value_info xi = im_.info(x);
    if (xi.rank != 3) im_.invalid(node_, "X needs rank 3");
    if (layout_ != 0) x = transposed(x, {1, 0, 2}, "X as [seq, batch, input]");
    xi = im_.info(x);
    steps_ = xi.shape[0];
    if (steps_ == PHX_DIM_DYNAMIC) im_.needs_sizes(node_, "a recurrence over a dynamic sequence");
    if (xi.shape[2] == PHX_DIM_DYNAMIC) im_.needs_sizes(node_, "a dynamic input size");
    if (steps_ > 4096) im_.unsupported(node_, "a sequence of more than 4096 steps (unrolled)");
    check_weights(xi.shape[2]);
    const int directions = direction_ == "bidirectional" ? 2 : 1;
    std::vector<phx_value> ys, hs, cs;
    for (int d = 0; d < directions; ++d) {
      const bool reverse = direction_ == "reverse" || d == 1;
      run_direction(x, d, reverse);
      ys.push_back(join_steps());
      hs.push_back(as_state_slice(h_, "Y_h"));
      if (cell_ == Cell::kLstm) cs.push_back(as_state_slice(c_, "Y_c"));
    }
    phx_value y = ys.size() == 1 ? ys[0] : concat(im_, node_, ys, 1, "Y directions");
    phx_value y_h = hs.size() == 1 ? hs[0] : concat(im_, node_, hs, 0, "Y_h directions");
    if (layout_ != 0) {
      y = transposed(y, {2, 0, 1, 3}, "Y as [batch, seq, directions, hidden]");
      y_h = transposed(y_h, {1, 0, 2}, "Y_h as [batch, directions, hidden]");
    }
    const int32_t elem_type = im_.input(node_, 0).elem_type;
    im_.define(node_, 0, y, elem_type);
    im_.define(node_, 1, y_h, elem_type);
    if (cell_ == Cell::kLstm) {
      phx_value y_c = cs.size() == 1 ? cs[0] : concat(im_, node_, cs, 0, "Y_c directions");
      if (layout_ != 0) y_c = transposed(y_c, {1, 0, 2}, "Y_c as [batch, directions, hidden]");
      im_.define(node_, 2, y_c, elem_type);
    }
  }

 private:
  void read_attributes() {
    hidden_ = attr_int(node_, "hidden_size", 0);
    if (hidden_ < 1) im_.invalid(node_, "hidden_size must be given and at least 1");
    if (hidden_ > (int64_t{1} << 24)) im_.unsupported(node_, "a hidden_size above 2^24");
    direction_ = attr_string(node_, "direction", "forward");
    if (direction_ != "forward" && direction_ != "reverse" && direction_ != "bidirectional")
      im_.invalid(node_, "direction '" + direction_ + "'");
    layout_ = attr_int(node_, "layout", 0);
    if (layout_ != 0 && layout_ != 1) im_.invalid(node_, "layout must be 0 or 1");
    if (cell_ == Cell::kLstm && attr_int(node_, "input_forget", 0) != 0)
      im_.unsupported(node_, "input_forget (coupled input and forget gates)");
    linear_before_reset_ = attr_int(node_, "linear_before_reset", 0) != 0;
    if (const onnx::AttributeProto* clip = find_attribute(node_, "clip")) {
      clip_ = clip->f();
      if (!(clip_ > 0.0f)) im_.invalid(node_, "clip must be positive");
    }
    // The activations of one direction: f, g, h (LSTM), f, g (GRU), f (RNN); a
    // bidirectional node lists both directions'.
    const std::vector<std::string> defaults =
        cell_ == Cell::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
        : cell_ == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                              : std::vector<std::string>{"Tanh"};
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    if (const onnx::AttributeProto* a = find_attribute(node_, "activations"))
      for (const auto& s : a->strings()) names.push_back(s);
    if (const onnx::AttributeProto* a = find_attribute(node_, "activation_alpha"))
      alphas.assign(a->floats().begin(), a->floats().end());
    if (const onnx::AttributeProto* a = find_attribute(node_, "activation_beta"))
      betas.assign(a->floats().begin(), a->floats().end());
    const size_t per_direction = defaults.size();
    const size_t wanted = per_direction * (direction_ == "bidirectional" ? 2 : 1);
    if (names.empty())
      for (size_t i = 0; i < wanted; ++i) names.push_back(defaults[i % per_direction]);
    if (names.size() != wanted)
      im_.invalid(node_, "activations lists " + std::to_string(names.size()) + " functions for " +
                             std::to_string(wanted));
    // alpha and beta are consumed in order by the functions that take them.
    size_t next_alpha = 0, next_beta = 0;
    for (const std::string& name : names) {
      Activation act{name};
      if (name == "LeakyRelu" || name == "HardSigmoid" || name == "Elu") {
        act.alpha = name == "LeakyRelu" ? 0.01f : name == "HardSigmoid" ? 0.2f : 1.0f;
        if (next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
      }
      if (name == "HardSigmoid") {
        act.beta = 0.5f;
        if (next_beta < betas.size()) act.beta = betas[next_beta++];
      }
      if (name != "Sigmoid" && name != "Tanh" && name != "Relu" && name != "LeakyRelu" &&
          name != "HardSigmoid" && name != "Elu" && name != "Softplus")
        im_.unsupported(node_, "the activation '" + name + "'");
      activations_.push_back(act);
    }
  }

  // W [directions, gates * hidden, input], R [directions, gates * hidden, hidden].
  void check_weights(int64_t input_size) {
    const int64_t directions = direction_ == "bidirectional" ? 2 : 1;
    const std::vector<int64_t> w_dims{directions, gates_ * hidden_, input_size};
    const std::vector<int64_t> r_dims{directions, gates_ * hidden_, hidden_};
    if (dims_of(1) != w_dims) im_.invalid(node_, "W's shape does not match the attributes and X");
    if (dims_of(2) != r_dims) im_.invalid(node_, "R's shape does not match the attributes");
    if (im_.has_input(node_, 3) &&
        dims_of(3) != std::vector<int64_t>{directions, 2 * gates_ * hidden_})
      im_.invalid(node_, "B's shape does not match the attributes");
    if (cell_ == Cell::kLstm && im_.has_input(node_, 7) &&
        dims_of(7) != std::vector<int64_t>{directions, 3 * hidden_})
      im_.invalid(node_, "P's shape does not match the attributes");
  }

  std::vector<int64_t> dims_of(int i) {
    const phx_value_info vi = im_.info(im_.graph_input(node_, i));
    return std::vector<int64_t>(vi.shape, vi.shape + vi.rank);
  }

  phx_value add(phx_op_id id, const void* params, const std::vector<phx_value>& inputs,
                const char* suffix) {
    return im_.add_node(node_, id, params, inputs, 1, {}, suffix)[0];
  }

  phx_value transposed(phx_value v, const std::vector<uint32_t>& perm, const char* suffix) {
    phx_transpose_params params{};
    params.struct_size = sizeof params;
    std::copy(perm.begin(), perm.end(), params.perm);
    return add(PHX_OP_TRANSPOSE, &params, {v}, suffix);
  }

  // Elements [begin, end) of v along axis.
  phx_value sliced(phx_value v, uint32_t axis, int64_t begin, int64_t end, const char* suffix) {
    phx_slice_params params = PHX_SLICE_PARAMS_INIT;
    params.starts[axis] = begin;
    params.ends[axis] = end;
    params.steps[axis] = 1;
    return add(PHX_OP_SLICE, &params, {v}, suffix);
  }

  // Direction d of input i ([directions, ...]) without its first dimension, as dims.
  phx_value of_direction(int i, int d, std::vector<int64_t> dims, const char* suffix) {
    return reshape_to(im_, node_, sliced(im_.graph_input(node_, i), 0, d, d + 1, suffix), dims,
                      suffix);
  }

  phx_value activation(phx_value v, size_t index, const char* suffix) {
    if (clip_ > 0.0f) {
      const phx_elementwise_params bounds = PHX_ELEMENTWISE_PARAMS_INIT(-clip_, clip_);
      v = add(PHX_OP_CLIP, &bounds, {v}, "clipped");
    }
    const Activation& a = activations_[index];
    const phx_elementwise_params params = PHX_ELEMENTWISE_PARAMS_INIT(a.alpha, a.beta);
    if (a.name == "Sigmoid") return add(PHX_OP_SIGMOID, nullptr, {v}, suffix);
    if (a.name == "Tanh") return add(PHX_OP_TANH, nullptr, {v}, suffix);
    if (a.name == "Relu") return add(PHX_OP_RELU, nullptr, {v}, suffix);
    if (a.name == "Softplus") return add(PHX_OP_SOFTPLUS, nullptr, {v}, suffix);
    if (a.name == "LeakyRelu") return add(PHX_OP_LEAKY_RELU, &params, {v}, suffix);
    if (a.name == "HardSigmoid") return add(PHX_OP_HARD_SIGMOID, &params, {v}, suffix);
    return add(PHX_OP_ELU, &params, {v}, suffix);
  }

  // The state before the first step: the given initial one of direction d, or a zero
  // row [1, hidden] that broadcasts over the batch (zero set: the step leaves out what
  // it multiplies).
  phx_value initial_state(int input, int d, const char* suffix, bool& zero) {
    zero = !im_.has_input(node_, input);
    if (!zero) return of_direction(input, d, {-1, hidden_}, suffix);
    KnownValue k;
    k.elem_type = im_.input(node_, 0).elem_type;
    k.dims = {1, hidden_};
    k.reals.assign(static_cast<size_t>(hidden_), 0.0);
    return im_.constant(k, node_.name() + " " + suffix);
  }

  // h R^T + x, or x alone while h is zero.
  phx_value hidden_product(phx_value h, bool zero, phx_value r, phx_value x, const char* suffix) {
    if (zero) return x;
    phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
    params.transpose_b = 1;
    return add(PHX_OP_MATMUL, &params, {h, r, x}, suffix);
  }

  void run_direction(phx_value x, int d, bool reverse) {
    const int64_t width = gates_ * hidden_;
    const size_t first_activation = static_cast<size_t>(d) * (cell_ == Cell::kLstm  ? 3
                                                              : cell_ == Cell::kGru ? 2
                                                                                    : 1);
    const phx_value w = of_direction(1, d, {width, -1}, "W");
    const phx_value r = of_direction(2, d, {width, hidden_}, "R");
    // Every step's input projection in one matmul, with Wb + Rb (GRU's Rbh, inside the
    // reset gate with linear_before_reset, goes with the hidden projection instead).
    phx_value input_bias = PHX_VALUE_NONE, hidden_bias = PHX_VALUE_NONE;
    if (im_.has_input(node_, 3)) {
      const phx_value b = of_direction(3, d, {2 * width}, "B");
      const phx_value wb = sliced(b, 0, 0, width, "Wb");
      const phx_value rb = sliced(b, 0, width, 2 * width, "Rb");
      input_bias = add(PHX_OP_ADD, nullptr, {wb, rb}, "Wb + Rb");
      if (cell_ == Cell::kGru && linear_before_reset_) {
        hidden_bias = rb;
        input_bias = concat(im_, node_,
                            {sliced(input_bias, 0, 0, 2 * hidden_, "Wb + Rb of z r"),
                             sliced(wb, 0, 2 * hidden_, width, "Wbh")},
                            0, "Wb + Rb but Rbh");
      }
    }
    phx_matmul_params by_transposed = PHX_MATMUL_PARAMS_INIT;
    by_transposed.transpose_b = 1;
    std::vector<phx_value> projection_inputs{x, w};
    if (input_bias != PHX_VALUE_NONE) projection_inputs.push_back(input_bias);
    const phx_value projected = add(PHX_OP_MATMUL, &by_transposed, projection_inputs, "X W^T");
    phx_value peephole = PHX_VALUE_NONE;
    if (cell_ == Cell::kLstm && im_.has_input(node_, 7))
      peephole = of_direction(7, d, {3 * hidden_}, "P");
    phx_value lengths = PHX_VALUE_NONE;
    if (im_.has_input(node_, 4))
      lengths = reshape_to(im_, node_, im_.graph_input(node_, 4), {-1, 1}, "lengths");
    // What a step past a sequence's end outputs.
    const phx_value zero =
        lengths != PHX_VALUE_NONE ? im_.scalar_constant(node_, 0.0, "0") : PHX_VALUE_NONE;

    h_ = initial_state(5, d, "initial_h", zero_h_);
    c_ = cell_ == Cell::kLstm ? initial_state(6, d, "initial_c", zero_c_) : PHX_VALUE_NONE;
    outputs_.assign(static_cast<size_t>(steps_), PHX_VALUE_NONE);
    for (int64_t i = 0; i < steps_; ++i) {
      const int64_t t = reverse ? steps_ - 1 - i : i;
      const phx_value x_t =
          reshape_to(im_, node_, sliced(projected, 0, t, t + 1, "step"), {-1, width}, "step");
      phx_value h = PHX_VALUE_NONE, c = PHX_VALUE_NONE;
      if (cell_ == Cell::kLstm)
        lstm_step(x_t, r, peephole, first_activation, h, c);
      else if (cell_ == Cell::kGru)
        h = gru_step(x_t, r, hidden_bias, first_activation);
      else
        h = activation(hidden_product(h_, zero_h_, r, x_t, "H R^T + x"), first_activation, "f");
      phx_value y = h;
      if (lengths != PHX_VALUE_NONE) {
        const phx_value step = im_.constant(known_step(t), node_.name() + " step");
        const phx_value live = add(PHX_OP_LESS, nullptr, {step, lengths}, "live");
        y = add(PHX_OP_WHERE, nullptr, {live, h, zero}, "Y step");
        h = add(PHX_OP_WHERE, nullptr, {live, h, h_}, "H kept");
        if (c != PHX_VALUE_NONE) c = add(PHX_OP_WHERE, nullptr, {live, c, c_}, "C kept");
      }
      h_ = h;
      c_ = c;
      zero_h_ = zero_c_ = false;
      outputs_[static_cast<size_t>(t)] = reshape_to(im_, node_, y, {1, 1, -1, hidden_}, "Y step");
    }
  }

  KnownValue known_step(int64_t t) const {
    KnownValue k;
    k.elem_type = im_.input(node_, 4).elem_type;
    k.dims = {1};
    k.ints = {t};
    return k;
  }

  // i, o, f, c gates; C = f C' + i c; H = o h(C); peepholes P = [Pi, Po, Pf].
  void lstm_step(phx_value x_t, phx_value r, phx_value peephole, size_t act, phx_value& h,
                 phx_value& c) {
    const phx_value sum = hidden_product(h_, zero_h_, r, x_t, "gates");
    auto gate = [&](int g) { return sliced(sum, 1, g * hidden_, (g + 1) * hidden_, "gate"); };
    auto peep = [&](phx_value v, int p, phx_value state, bool zero) {
      if (peephole == PHX_VALUE_NONE || zero) return v;
      const phx_value weight = sliced(peephole, 0, p * hidden_, (p + 1) * hidden_, "peephole");
      return add(PHX_OP_ADD, nullptr, {v, add(PHX_OP_MUL, nullptr, {weight, state}, "peephole")},
                 "with peephole");
    };
    const phx_value i = activation(peep(gate(0), 0, c_, zero_c_), act, "i");
    const phx_value candidate = activation(gate(3), act + 1, "c");
    c = add(PHX_OP_MUL, nullptr, {i, candidate}, "i c");
    if (!zero_c_) {
      const phx_value f = activation(peep(gate(2), 2, c_, false), act, "f");
      c = add(PHX_OP_ADD, nullptr, {add(PHX_OP_MUL, nullptr, {f, c_}, "f C"), c}, "C");
    }
    const phx_value o = activation(peep(gate(1), 1, c, false), act, "o");
    h = add(PHX_OP_MUL, nullptr, {o, activation(c, act + 2, "h(C)")}, "H");
  }

  // z, r, h gates; H = (1 - z) h + z H' = h + z (H' - h).
  phx_value gru_step(phx_value x_t, phx_value r, phx_value hidden_bias, size_t act) {
    const int64_t two = 2 * hidden_;
    const phx_value r_zr = sliced(r, 0, 0, two, "Rz Rr");
    const phx_value r_h = sliced(r, 0, two, 3 * hidden_, "Rh");
    const phx_value x_zr = sliced(x_t, 1, 0, two, "x z r");
    const phx_value x_h = sliced(x_t, 1, two, 3 * hidden_, "x h");
    const phx_value zr = hidden_product(h_, zero_h_, r_zr, x_zr, "z r");
    const phx_value z = activation(sliced(zr, 1, 0, hidden_, "z"), act, "z");
    const phx_value reset = activation(sliced(zr, 1, hidden_, two, "r"), act, "r");
    phx_value candidate;
    if (linear_before_reset_) {
      // r (H Rh^T + Rbh): with H zero, r Rbh.
      phx_value hr = PHX_VALUE_NONE;
      const phx_value rbh = hidden_bias == PHX_VALUE_NONE
                                ? PHX_VALUE_NONE
                                : sliced(hidden_bias, 0, two, 3 * hidden_, "Rbh");
      if (!zero_h_) {
        phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
        params.transpose_b = 1;
        std::vector<phx_value> in{h_, r_h};
        if (rbh != PHX_VALUE_NONE) in.push_back(rbh);
        hr = add(PHX_OP_MATMUL, &params, in, "H Rh^T + Rbh");
      } else {
        hr = rbh;
      }
      candidate = hr == PHX_VALUE_NONE
                      ? x_h
                      : add(PHX_OP_ADD, nullptr,
                            {x_h, add(PHX_OP_MUL, nullptr, {reset, hr}, "r (H Rh^T)")}, "h in");
    } else {
      const phx_value rh = zero_h_ ? h_ : add(PHX_OP_MUL, nullptr, {reset, h_}, "r H");
      candidate = hidden_product(rh, zero_h_, r_h, x_h, "h in");
    }
    const phx_value hh = activation(candidate, act + 1, "h");
    const phx_value kept =
        add(PHX_OP_MUL, nullptr, {z, add(PHX_OP_SUB, nullptr, {h_, hh}, "H' - h")}, "z (H' - h)");
    return add(PHX_OP_ADD, nullptr, {hh, kept}, "H");
  }

  // The steps' outputs as [seq, 1, batch, hidden].
  phx_value join_steps() {
    if (outputs_.size() == 1) return outputs_[0];
    return concat(im_, node_, outputs_, 0, "Y");
  }

  // A state [batch, hidden] (or a zero row) as [1, batch, hidden].
  phx_value as_state_slice(phx_value v, const char* suffix) {
    return reshape_to(im_, node_, v, {1, -1, hidden_}, suffix);
  }

  Importer& im_;
  const onnx::NodeProto& node_;
  const Cell cell_;
  int64_t gates_ = 1;
  int64_t hidden_ = 0;
  int64_t steps_ = 0;
  int64_t layout_ = 0;
  std::string direction_;
  bool linear_before_reset_ = false;
  float clip_ = 0.0f;
  std::vector<Activation> activations_;
  phx_value h_ = PHX_VALUE_NONE, c_ = PHX_VALUE_NONE;
  bool zero_h_ = false, zero_c_ = false;  // h_ and c_ are zero rows
  std::vector<phx_value> outputs_;
};

}  // namespace

void convert_lstm(Importer& im, const onnx::NodeProto& node) {
  Recurrence(im, node, Cell::kLstm).convert();
}
void convert_gru(Importer& im, const onnx::NodeProto& node) {
  Recurrence(im, node, Cell::kGru).convert();
}
void convert_rnn(Importer& im, const onnx::NodeProto& node) {
  Recurrence(im, node, Cell::kRnn).convert();
}

}  // namespace phx::onnx_import
