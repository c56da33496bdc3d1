// The op table (op_table.h) through the C API: phx_op_info_get.
#include <phx/abi_structs.h>
#include <phx/op_params.h>
#include <phx/op_table.h>
#include <phynexus/phynexus.h>

#include <string>

#include "errors.h"

using phx::enum_value;

extern "C" {

PHX_API phx_status phx_op_info_get(phx_op_id op, phx_op_info* out_info) {
  return phx::guard(__func__, [&] {
    phx::require_out(out_info, "out_info");
    const phx::OpSchema* schema = phx::find_op_schema(enum_value(op));
    if (schema == nullptr)
      phx::fail(PHX_STATUS_NOT_FOUND, "no op has the id " + std::to_string(enum_value(op)));
    phx_op_info info{};
    info.struct_size = sizeof info;
    info.name = schema->name;
    info.summary = schema->summary;
    const phx::ParamsDescription& params = phx::params_description(schema->params);
    info.params_struct = params.struct_name;
    info.input_count = schema->input_count();
    info.min_input_count = schema->min_input_count();
    info.input_names = schema->inputs;
    info.optional_inputs = schema->optional_inputs;
    info.output_count = schema->output_count();
    info.output_names = schema->outputs;
    info.dtype_mask = schema->dtypes;
    info.params_size = params.size;
    info.param_field_count = params.fields.size();
    info.param_fields = params.fields.empty() ? nullptr : params.fields.data();
    info.default_params = phx::default_params(*schema);
    phx::write_struct(out_info, info, "out_info");
  });
}

}  // extern "C"
