// The saved form of an executable (phx_executable_save, phx_executable_load): its lowered
// steps and slots, the contents of its constants, the devices it runs on by identity,
// and what each device kept of the parts it compiled. Loading checks the whole file
// before it makes anything, so that a damaged or hostile one is refused cleanly.
#pragma once

#include <memory>
#include <vector>

#include "executable.h"

namespace phx::graph {

// Waits for exe's runs and writes it, with what each device that compiled a part of it
// for the current plan keeps of that part (none from a plugin without
// executable_serialize: that part is compiled again when loaded).
std::vector<unsigned char> save_executable(Executable& exe);

// Makes an executable of context from what save_executable wrote. options (may be null)
// chooses the devices as phx_executable_load says. Throws with nothing left behind.
std::unique_ptr<Executable> load_executable(Context& context, const void* data, size_t size,
                                            const phx_compile_options* options);

}  // namespace phx::graph
