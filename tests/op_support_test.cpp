// phx_device_supports_op answers what phx_op_run then does: on every device, for every op
// and every combination of its tensors' dtypes (all of them for an op's main tensors,
// each auxiliary tensor's dtype varied on its own), with and without its optional inputs
// and for the parameter variants that change what a device may take. A variant answered
// 1 runs; one answered 0 is refused with UNSUPPORTED (or INVALID_ARGUMENT when the op's
// rules refuse it) and never runs. The context has no CPU fallback, so every answer is
// the device's own. A plugin of ABI 1.1 or older, which cannot answer for a variant, may
// still refuse one it was said to run (plugin_may_decline_variants).
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "op_suite.h"

namespace phx_test {
namespace {

constexpr phx_dtype kEveryDtype[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16, PHX_DTYPE_I8,
                                     PHX_DTYPE_I16, PHX_DTYPE_I32, PHX_DTYPE_U8};

// One tensor position of an op: its shape, the dtype a valid variant usually gives it
// (where the enumeration leaves it alone), and whether it may be left out.
struct Slot {
  Shape shape;
  phx_dtype usual;
  bool optional = false;
  bool main = false;  // its dtype is enumerated together with the other main slots
};

struct OpForm {
  phx_op_id op;
  std::vector<Slot> inputs, outputs;
  std::vector<std::vector<unsigned char>> params;  // parameter structs to try; none: null
};

template <typename Params>
std::vector<unsigned char> bytes_of(const Params& p) {
  std::vector<unsigned char> out(sizeof p);
  std::memcpy(out.data(), &p, sizeof p);
  return out;
}

// Shapes that every op's rules accept for every dtype the rules allow.
std::vector<OpForm> op_forms() {
  const Slot x{{2, 3}, PHX_DTYPE_F32, false, true};
  const Slot scalar_f32{{1}, PHX_DTYPE_F32}, scalar_i32{{1}, PHX_DTYPE_I32, true};
  std::vector<OpForm> forms;
  phx_matmul_params mm = PHX_MATMUL_PARAMS_INIT, mm_gelu = PHX_MATMUL_PARAMS_INIT;
  mm_gelu.activation = PHX_ACTIVATION_GELU;
  forms.push_back({PHX_OP_MATMUL,
                   {x, {{3, 4}, PHX_DTYPE_F32, false, true}, {{4}, PHX_DTYPE_F32, true}},
                   {{{2, 4}, PHX_DTYPE_F32, false, true}},
                   {bytes_of(mm), bytes_of(mm_gelu)}});
  for (phx_op_id op : {PHX_OP_ADD, PHX_OP_SUB, PHX_OP_MUL, PHX_OP_DIV})
    forms.push_back({op, {x, x}, {x}, {}});
  for (phx_op_id op : {PHX_OP_RELU, PHX_OP_GELU, PHX_OP_SILU, PHX_OP_SOFTMAX, PHX_OP_CAST})
    forms.push_back({op, {x}, {x}, {}});
  forms.push_back(
      {PHX_OP_LAYER_NORM, {x, {{3}, PHX_DTYPE_F32, true}, {{3}, PHX_DTYPE_F32, true}}, {x}, {}});
  forms.push_back({PHX_OP_RMS_NORM, {x, {{3}, PHX_DTYPE_F32, true}}, {x}, {}});
  forms.push_back({PHX_OP_TRANSPOSE, {x}, {{{3, 2}, PHX_DTYPE_F32, false, true}}, {}});
  for (phx_op_id op : {PHX_OP_REDUCE_SUM, PHX_OP_REDUCE_MAX})
    forms.push_back({op, {x}, {{{}, PHX_DTYPE_F32, false, true}}, {}});
  const Slot image{{1, 2, 3, 3}, PHX_DTYPE_F32, false, true};
  const Slot weight{{2, 2, 2, 2}, PHX_DTYPE_F32, false, true};
  const Slot conv_out{{1, 2, 2, 2}, PHX_DTYPE_F32, false, true};
  forms.push_back({PHX_OP_CONV2D, {image, weight, {{2}, PHX_DTYPE_F32, true}}, {conv_out}, {}});
  phx_attention_params causal = PHX_ATTENTION_PARAMS_INIT;
  causal.mask = PHX_ATTENTION_MASK_CAUSAL;
  forms.push_back({PHX_OP_ATTENTION,
                   {{{1, 2, 3, 4}, PHX_DTYPE_F32, false, true},
                    {{1, 1, 3, 4}, PHX_DTYPE_F32, false, true},
                    {{1, 1, 3, 4}, PHX_DTYPE_F32, false, true}},
                   {{{1, 2, 3, 4}, PHX_DTYPE_F32, false, true}},
                   {{}, bytes_of(causal)}});
  forms.push_back(
      {PHX_OP_ROPE,
       {{{1, 3, 4}, PHX_DTYPE_F32, false, true}, {{3, 2}, PHX_DTYPE_F32}, {{3, 2}, PHX_DTYPE_F32}},
       {{{1, 3, 4}, PHX_DTYPE_F32, false, true}},
       {}});
  forms.push_back(
      {PHX_OP_QUANTIZE, {x, scalar_f32, scalar_i32}, {{{2, 3}, PHX_DTYPE_I8, false, true}}, {}});
  forms.push_back(
      {PHX_OP_DEQUANTIZE, {{{2, 3}, PHX_DTYPE_I8, false, true}, scalar_f32, scalar_i32}, {x}, {}});
  phx_matmul_params qrelu = PHX_MATMUL_PARAMS_INIT;
  qrelu.activation = PHX_ACTIVATION_RELU;
  const std::vector<Slot> quantization = {scalar_f32, scalar_i32, scalar_f32, scalar_i32};
  auto quantized_inputs = [&](Slot a, Slot b, int64_t channels) {
    std::vector<Slot> in = {a, b};
    in.insert(in.end(), quantization.begin(), quantization.end());
    in.push_back({{channels}, PHX_DTYPE_I32, true});
    in.push_back({{1}, PHX_DTYPE_F32, true});
    in.push_back(scalar_i32);
    return in;
  };
  forms.push_back({PHX_OP_QMATMUL,
                   quantized_inputs({{2, 3}, PHX_DTYPE_I8, false, true},
                                    {{3, 4}, PHX_DTYPE_I8, false, true}, 4),
                   {{{2, 4}, PHX_DTYPE_I8, false, true}},
                   {{}, bytes_of(qrelu)}});
  forms.push_back({PHX_OP_QCONV2D,
                   quantized_inputs({{1, 2, 3, 3}, PHX_DTYPE_I8, false, true},
                                    {{2, 2, 2, 2}, PHX_DTYPE_I8, false, true}, 2),
                   {{{1, 2, 2, 2}, PHX_DTYPE_I8, false, true}},
                   {}});
  forms.push_back(
      {PHX_OP_DYNAMIC_QUANTIZE,
       {x},
       {{{2, 3}, PHX_DTYPE_I8, false, true}, {{1}, PHX_DTYPE_F32}, {{1}, PHX_DTYPE_I32}},
       {}});
  for (phx_op_id op :
       {PHX_OP_SIGMOID,    PHX_OP_TANH, PHX_OP_EXP,         PHX_OP_LOG,          PHX_OP_SQRT,
        PHX_OP_NEG,        PHX_OP_ABS,  PHX_OP_ERF,         PHX_OP_FLOOR,        PHX_OP_CEIL,
        PHX_OP_RECIPROCAL, PHX_OP_SIGN, PHX_OP_SOFTPLUS,    PHX_OP_LEAKY_RELU,   PHX_OP_ELU,
        PHX_OP_SELU,       PHX_OP_CLIP, PHX_OP_LOG_SOFTMAX, PHX_OP_HARD_SIGMOID, PHX_OP_HARD_SWISH,
        PHX_OP_SIN,        PHX_OP_COS,  PHX_OP_ROUND})
    forms.push_back({op, {x}, {x}, {}});
  for (phx_op_id op : {PHX_OP_POW, PHX_OP_MAX, PHX_OP_MIN, PHX_OP_PRELU})
    forms.push_back({op, {x, x}, {x}, {}});
  const Slot boolean{{2, 3}, PHX_DTYPE_U8};
  for (phx_op_id op : {PHX_OP_EQUAL, PHX_OP_LESS, PHX_OP_GREATER})
    forms.push_back({op, {x, x}, {boolean}, {}});
  forms.push_back({PHX_OP_WHERE, {boolean, x, x}, {x}, {}});
  forms.push_back({PHX_OP_NOT,
                   {{{2, 3}, PHX_DTYPE_U8, false, true}},
                   {{{2, 3}, PHX_DTYPE_U8, false, true}},
                   {}});
  for (phx_op_id op : {PHX_OP_REDUCE_MEAN, PHX_OP_REDUCE_MIN, PHX_OP_REDUCE_PROD})
    forms.push_back({op, {x}, {{{}, PHX_DTYPE_F32, false, true}}, {}});
  forms.push_back({PHX_OP_ARGMAX, {x}, {{{1, 3}, PHX_DTYPE_I32}}, {}});
  phx_top_k_params top_k = PHX_TOP_K_PARAMS_INIT;
  top_k.k = 2;
  forms.push_back(
      {PHX_OP_TOP_K, {x}, {{{2, 2}, PHX_DTYPE_F32}, {{2, 2}, PHX_DTYPE_I32}}, {bytes_of(top_k)}});
  const Slot channels{{3}, PHX_DTYPE_F32};  // x's dimension 1
  forms.push_back({PHX_OP_BATCH_NORM, {x, channels, channels, channels, channels}, {x}, {}});
  const Slot image3{{1, 3, 2}, PHX_DTYPE_F32, false, true};
  forms.push_back({PHX_OP_INSTANCE_NORM, {image3, channels, channels}, {image3}, {}});
  phx_reshape_params reshape = {sizeof reshape, 2, {3, 2}};
  forms.push_back(
      {PHX_OP_RESHAPE, {x}, {{{3, 2}, PHX_DTYPE_F32, false, true}}, {bytes_of(reshape)}});
  // Concat's output is sized for the inputs given (concat_output_shape).
  std::vector<Slot> concat_inputs = {x, x};
  for (int i = 2; i < PHX_MAX_OP_INPUTS; ++i)
    concat_inputs.push_back({{2, 3}, PHX_DTYPE_F32, true});
  concat_inputs[1].optional = true;
  forms.push_back({PHX_OP_CONCAT, concat_inputs, {{{18, 3}, PHX_DTYPE_F32, false, true}}, {}});
  for (phx_op_id op : {PHX_OP_SLICE, PHX_OP_TILE, PHX_OP_PAD}) forms.push_back({op, {x}, {x}, {}});
  forms.push_back({PHX_OP_GATHER, {x, {{2}, PHX_DTYPE_I32}}, {x}, {}});
  phx_reshape_params expand = {sizeof expand, 3, {2, 2, 3}};
  forms.push_back(
      {PHX_OP_EXPAND, {x}, {{{2, 2, 3}, PHX_DTYPE_F32, false, true}}, {bytes_of(expand)}});
  phx_pool_params pool = PHX_POOL_PARAMS_INIT;
  pool.kernel[0] = pool.kernel[1] = 2;
  for (phx_op_id op : {PHX_OP_MAX_POOL, PHX_OP_AVG_POOL})
    forms.push_back({op, {image}, {conv_out}, {bytes_of(pool)}});
  forms.push_back({PHX_OP_CONV_TRANSPOSE2D,
                   {image, weight, {{2}, PHX_DTYPE_F32, true}},
                   {{{1, 2, 4, 4}, PHX_DTYPE_F32, false, true}},
                   {}});
  phx_resize_params nearest = {
      sizeof nearest, PHX_RESIZE_NEAREST, PHX_RESIZE_ASYMMETRIC, PHX_RESIZE_FLOOR, 2, {4, 6}, {}};
  phx_resize_params linear = nearest;
  linear.mode = PHX_RESIZE_LINEAR;
  forms.push_back({PHX_OP_RESIZE,
                   {x},
                   {{{4, 6}, PHX_DTYPE_F32, false, true}},
                   {bytes_of(nearest), bytes_of(linear)}});
  return forms;
}

// One variant to try: a dtype per slot, PHX_DTYPE_INVALID for an optional input left out.
struct Variant {
  std::vector<phx_dtype> inputs, outputs;
  const std::vector<unsigned char>* params;
};

// The main slots' dtypes in every combination; then, from the usual variant, each other
// slot's dtype on its own, and each optional input left out on its own.
std::vector<Variant> variants_of(const OpForm& form) {
  std::vector<Variant> out;
  std::vector<phx_dtype> usual_in, usual_out;
  for (const Slot& s : form.inputs) usual_in.push_back(s.usual);
  for (const Slot& s : form.outputs) usual_out.push_back(s.usual);
  std::vector<phx_dtype*> mains;
  Variant current{usual_in, usual_out, nullptr};
  for (size_t i = 0; i < form.inputs.size(); ++i)
    if (form.inputs[i].main) mains.push_back(&current.inputs[i]);
  for (size_t i = 0; i < form.outputs.size(); ++i)
    if (form.outputs[i].main) mains.push_back(&current.outputs[i]);
  std::function<void(size_t)> enumerate = [&](size_t k) {
    if (k == mains.size()) {
      out.push_back(current);
      return;
    }
    for (phx_dtype dt : kEveryDtype) {
      *mains[k] = dt;
      enumerate(k + 1);
    }
  };
  enumerate(0);
  auto vary = [&](std::vector<phx_dtype> Variant::*which, const std::vector<Slot>& slots) {
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].main) continue;
      for (phx_dtype dt : kEveryDtype) {
        Variant v{usual_in, usual_out, nullptr};
        (v.*which)[i] = dt;
        out.push_back(v);
      }
    }
  };
  vary(&Variant::inputs, form.inputs);
  vary(&Variant::outputs, form.outputs);
  for (size_t i = 0; i < form.inputs.size(); ++i) {
    if (!form.inputs[i].optional) continue;
    Variant v{usual_in, usual_out, nullptr};
    v.inputs[i] = PHX_DTYPE_INVALID;
    out.push_back(v);
  }
  // The parameter variants, each with every main dtype combination again.
  std::vector<Variant> with_params;
  for (const auto& p : form.params)
    for (const Variant& v : out) with_params.push_back({v.inputs, v.outputs, &p});
  if (!form.params.empty()) out = std::move(with_params);
  return out;
}

// Concat's output, along axis 0, holds the inputs given (up to the first left out).
Shape concat_output_shape(const OpForm& form, const Variant& v) {
  Shape shape = form.outputs[0].shape;
  shape[0] = 0;
  for (size_t i = 0; i < v.inputs.size() && v.inputs[i] != PHX_DTYPE_INVALID; ++i)
    shape[0] += form.inputs[i].shape[0];
  return shape;
}

std::string describe(const OpForm& form, const Variant& v) {
  std::string s = std::string(phx_op_name(form.op)) + "(";
  for (size_t i = 0; i < v.inputs.size(); ++i)
    s += (i ? ", " : "") +
         std::string(v.inputs[i] == PHX_DTYPE_INVALID ? "none" : phx_dtype_name(v.inputs[i]));
  s += " ->";
  for (phx_dtype dt : v.outputs) s += std::string(" ") + phx_dtype_name(dt);
  if (v.params != nullptr) s += ", params variant";
  return s + ")";
}

class OpSupport : public ::testing::TestWithParam<DeviceParam> {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(phx_context_create(suite_context_options(), &context_), PHX_STATUS_OK)
        << phx_last_error();
  }
  static void TearDownTestSuite() {
    if (context_ != nullptr) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
    context_ = nullptr;
  }
  void SetUp() override {
    device_ = GetParam().index;
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context_, device_, &info), PHX_STATUS_OK);
    dtype_mask_ = info.dtype_mask;
    ASSERT_EQ(phx_stream_create(context_, device_, &stream_), PHX_STATUS_OK) << phx_last_error();
  }
  void TearDown() override {
    for (auto& [key, tensor] : tensors_) EXPECT_EQ(phx_tensor_destroy(tensor), PHX_STATUS_OK);
    if (stream_ != nullptr) {
      EXPECT_EQ(phx_stream_destroy(stream_), PHX_STATUS_OK);
    }
  }

  // A tensor of dtype and shape on the device, holding ones (a valid scale, zero point
  // and value for every op), made once and reused.
  phx_tensor tensor(phx_dtype dtype, const Shape& shape) {
    auto& t = tensors_[{dtype, shape}];
    if (t != nullptr) return t;
    EXPECT_EQ(phx_tensor_create(context_, device_, dtype, shape.size(), shape.data(), &t),
              PHX_STATUS_OK)
        << phx_last_error();
    const size_t count = static_cast<size_t>(element_count(shape)), size = phx_dtype_size(dtype);
    std::vector<unsigned char> ones(count * size);
    const float one_f32 = 1.0f;
    const int32_t one_i32 = 1;
    const uint16_t one_f16 = 0x3c00, one_bf16 = 0x3f80;
    const int16_t one_i16 = 1;
    for (size_t i = 0; i < count; ++i) {
      unsigned char* at = &ones[i * size];
      switch (dtype) {
        case PHX_DTYPE_F32:
          std::memcpy(at, &one_f32, 4);
          break;
        case PHX_DTYPE_I32:
          std::memcpy(at, &one_i32, 4);
          break;
        case PHX_DTYPE_F16:
          std::memcpy(at, &one_f16, 2);
          break;
        case PHX_DTYPE_BF16:
          std::memcpy(at, &one_bf16, 2);
          break;
        case PHX_DTYPE_I16:
          std::memcpy(at, &one_i16, 2);
          break;
        default:
          *at = 1;
      }
    }
    EXPECT_EQ(phx_tensor_upload(t, 0, ones.data(), ones.size()), PHX_STATUS_OK);
    return t;
  }

  bool holds(phx_dtype dt) const { return (dtype_mask_ & PHX_DTYPE_BIT(dt)) != 0; }

  static inline phx_context context_ = nullptr;
  size_t device_ = 0;
  uint32_t dtype_mask_ = 0;
  phx_stream stream_ = nullptr;
  std::map<std::pair<phx_dtype, Shape>, phx_tensor> tensors_;
};

// The forms above run through phx_op_run below, their optional inputs left out in turn,
// so they agree with the rules; here they agree with the op table (phx_op_info_get), so
// that the table says what the rules do. Every op has a form.
TEST(OpForms, FollowTheOpTable) {
  std::set<phx_op_id> seen;
  for (const OpForm& form : op_forms()) {
    SCOPED_TRACE(phx_op_name(form.op));
    seen.insert(form.op);
    phx_op_info info = PHX_OP_INFO_INIT;
    ASSERT_EQ(phx_op_info_get(form.op, &info), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(form.inputs.size(), info.input_count);
    for (size_t i = 0; i < form.inputs.size(); ++i)
      EXPECT_EQ(form.inputs[i].optional, (info.optional_inputs >> i & 1u) != 0)
          << "input " << i << " (" << info.input_names[i] << ")";
    EXPECT_EQ(form.outputs.size(), info.output_count);
    EXPECT_NE(info.dtype_mask & PHX_DTYPE_BIT(form.inputs[0].usual), 0u);
  }
  EXPECT_EQ(seen.size(), size_t{PHX_OP_COUNT - 1});
}

TEST_P(OpSupport, TheAnswerIsWhatTheOpCallDoes) {
  size_t asked = 0, supported = 0;
  for (const OpForm& form : op_forms()) {
    for (const Variant& v : variants_of(form)) {
      SCOPED_TRACE(describe(form, v));
      phx_op_variant query = {
          sizeof query,    form.op,         v.params != nullptr ? v.params->data() : nullptr,
          v.inputs.data(), v.inputs.size(), v.outputs.data(),
          v.outputs.size()};
      int answer = -1;
      ASSERT_EQ(phx_device_supports_op(context_, device_, &query, &answer), PHX_STATUS_OK)
          << phx_last_error();
      ASSERT_TRUE(answer == 0 || answer == 1);
      ++asked;
      bool every_dtype_held = true;
      for (const auto* list : {&v.inputs, &v.outputs})
        for (phx_dtype dt : *list) every_dtype_held &= dt == PHX_DTYPE_INVALID || holds(dt);
      if (!every_dtype_held) {
        EXPECT_EQ(answer, 0) << "a dtype the device cannot hold";
        continue;
      }
      int coarse = 0;
      ASSERT_EQ(phx_device_supports(context_, device_, form.op, v.inputs[0], &coarse),
                PHX_STATUS_OK);
      if (answer == 1) {
        EXPECT_EQ(coarse, 1) << "a variant is supported, its op and dtype not";
      }

      std::vector<phx_tensor> in, out;
      for (size_t i = 0; i < v.inputs.size(); ++i)
        in.push_back(v.inputs[i] == PHX_DTYPE_INVALID ? nullptr
                                                      : tensor(v.inputs[i], form.inputs[i].shape));
      for (size_t i = 0; i < v.outputs.size(); ++i)
        out.push_back(tensor(v.outputs[i], form.op == PHX_OP_CONCAT ? concat_output_shape(form, v)
                                                                    : form.outputs[i].shape));
      const phx_op_desc desc = {sizeof desc, form.op,    query.params, in.data(),
                                in.size(),   out.data(), out.size()};
      const phx_status run = phx_op_run(stream_, &desc, nullptr);
      const std::string message = phx_last_error();
      const phx_status finished = phx_stream_synchronize(stream_);
      if (answer == 1 && run == PHX_STATUS_UNSUPPORTED &&
          plugin_may_decline_variants(context_, device_)) {
        continue;  // a plugin of ABI 1.1 or older answers for the first dtype only
      }
      if (answer == 1) {
        ++supported;
        EXPECT_EQ(run, PHX_STATUS_OK) << "answered 1, but: " << message;
        EXPECT_EQ(finished, PHX_STATUS_OK) << phx_last_error();
      } else {
        EXPECT_TRUE(run == PHX_STATUS_UNSUPPORTED || run == PHX_STATUS_INVALID_ARGUMENT)
            << "answered 0, but phx_op_run returned " << phx_status_name(run) << ": " << message;
      }
    }
  }
  std::printf("op support: device %s: %zu variants asked, %zu supported\n", GetParam().name.c_str(),
              asked, supported);
  EXPECT_GT(supported, 0u);
}

// The answer for a malformed question is an error; for one the rules refuse, a 0.
TEST_P(OpSupport, BadQuestionsAreRefused) {
  const phx_dtype two_f32[] = {PHX_DTYPE_F32, PHX_DTYPE_F32}, one_f32[] = {PHX_DTYPE_F32};
  phx_op_variant add = {sizeof add, PHX_OP_ADD, nullptr, two_f32, 2, one_f32, 1};
  int answer = 7;
  EXPECT_EQ(phx_device_supports_op(context_, device_, nullptr, &answer),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_device_supports_op(context_, device_, &add, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_device_supports_op(context_, 1u << 20, &add, &answer), PHX_STATUS_NOT_FOUND);
  phx_op_variant bad = add;
  bad.op = static_cast<phx_op_id>(PHX_OP_COUNT);
  EXPECT_EQ(phx_device_supports_op(context_, device_, &bad, &answer), PHX_STATUS_INVALID_ARGUMENT);
  bad = add;
  bad.struct_size = sizeof(size_t);
  EXPECT_EQ(phx_device_supports_op(context_, device_, &bad, &answer), PHX_STATUS_INVALID_ARGUMENT);
  bad = add;
  bad.input_count = PHX_MAX_OP_INPUTS + 1;
  EXPECT_EQ(phx_device_supports_op(context_, device_, &bad, &answer), PHX_STATUS_INVALID_ARGUMENT);
  bad = add;
  bad.input_dtypes = nullptr;
  EXPECT_EQ(phx_device_supports_op(context_, device_, &bad, &answer), PHX_STATUS_INVALID_ARGUMENT);
  const phx_dtype unknown[] = {PHX_DTYPE_F32, static_cast<phx_dtype>(PHX_DTYPE_COUNT)};
  bad = add;
  bad.input_dtypes = unknown;
  EXPECT_EQ(phx_device_supports_op(context_, device_, &bad, &answer), PHX_STATUS_INVALID_ARGUMENT);
  const size_t too_small = 4;  // no parameter struct is smaller than its size field
  const phx_dtype x_f32[] = {PHX_DTYPE_F32};
  bad = {sizeof bad, PHX_OP_SOFTMAX, &too_small, x_f32, 1, one_f32, 1};
  EXPECT_EQ(phx_device_supports_op(context_, device_, &bad, &answer), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(answer, 7) << "a failed call leaves its out parameter alone";

  // Well formed, but the rules refuse it: add of f32 and i8.
  const phx_dtype mixed[] = {PHX_DTYPE_F32, PHX_DTYPE_I8};
  phx_op_variant refused = add;
  refused.input_dtypes = mixed;
  ASSERT_EQ(phx_device_supports_op(context_, device_, &refused, &answer), PHX_STATUS_OK);
  EXPECT_EQ(answer, 0);
}

INSTANTIATE_TEST_SUITE_P(Devices, OpSupport, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpSupport);

}  // namespace
}  // namespace phx_test
