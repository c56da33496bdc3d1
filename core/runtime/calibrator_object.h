// What a phx_calibrator handle stands for: the calibration math and its place in a
// context.
#pragma once

#include "calibrator.h"
#include "context.h"

namespace phx {

struct CalibratorObject {
  CalibratorObject(Context& owner, const phx_calibration_options& options)
      : context(&owner), calibrator(options) {}

  Context* context;
  uintptr_t handle = 0;
  Calibrator calibrator;
};

}  // namespace phx
