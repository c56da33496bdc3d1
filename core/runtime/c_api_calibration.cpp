// The C API of calibrators: handles around the calibration math (calibrator.h).
#include <phx/abi_structs.h>
#include <phynexus/phynexus.h>

#include <mutex>
#include <vector>

#include "calibrator_object.h"
#include "context.h"
#include "errors.h"
#include "transfer.h"

using namespace phx;

extern "C" {

PHX_API phx_status phx_calibrator_create(phx_context handle, const phx_calibration_options* options,
                                         phx_calibrator* out_calibrator) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_calibrator, "out_calibrator");
    auto opts =
        read_struct(options, phx_calibration_options PHX_CALIBRATION_OPTIONS_INIT, "options");
    CalibratorObject& calibrator = context.create_calibrator(opts);
    *out_calibrator = reinterpret_cast<phx_calibrator>(calibrator.handle);
  });
}

PHX_API phx_status phx_calibrator_destroy(phx_calibrator handle) {
  return guard(__func__, [&] {
    CalibratorObject& calibrator = lookup(handle);
    calibrator.context->destroy_calibrator(calibrator);
  });
}

PHX_API phx_status phx_calibrator_observe(phx_calibrator handle, phx_tensor tensor_handle) {
  return guard(__func__, [&] {
    CalibratorObject& calibrator = lookup(handle);
    Tensor& tensor = lookup(tensor_handle);
    require(tensor.context == calibrator.context,
            "the tensor belongs to another context than the calibrator");
    if (tensor.dtype != PHX_DTYPE_F32)
      fail(PHX_STATUS_INVALID_ARGUMENT,
           std::string("the tensor must be f32, got ") + phx_dtype_name(tensor.dtype));
    std::vector<float> values(static_cast<size_t>(tensor.element_count));
    tensor.device->wait_for_streams();
    read_to_host(tensor, values.data());
    calibrator.calibrator.observe(values.data(), tensor.shape, tensor.rank);
  });
}

PHX_API phx_status phx_calibrator_compute(phx_calibrator handle, float* out_scales,
                                          int32_t* out_zero_points, size_t capacity,
                                          size_t* out_count) {
  return guard(__func__, [&] {
    CalibratorObject& calibrator = lookup(handle);
    require_out(out_count, "out_count");
    require((out_scales != nullptr && out_zero_points != nullptr) || capacity == 0,
            "out_scales or out_zero_points is null but capacity is not 0");
    const Calibrator& math = calibrator.calibrator;
    if (math.empty()) fail(PHX_STATUS_NOT_FOUND, "nothing observed yet");
    const size_t count = math.channel_count();
    if (capacity > 0) {
      std::vector<float> scales(count);
      std::vector<int32_t> zero_points(count);
      math.compute(scales.data(), zero_points.data());
      const size_t copied = std::min(capacity, count);
      std::copy_n(scales.begin(), copied, out_scales);
      std::copy_n(zero_points.begin(), copied, out_zero_points);
    }
    *out_count = count;
  });
}

}  // extern "C"
