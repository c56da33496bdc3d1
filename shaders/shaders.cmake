# The Vulkan plugin's SPIR-V modules: one phx_vulkan_shader() per (source, variant).
# Dtypes are generated variants of one source (-D defines, shaders/dtype.glsl); tile
# sizes are specialization constants chosen at run time. Module names are
# <op>_<dtype>[_<dtype>], as ops/*.cpp ask for them.

set(PHX_SHADER_DIR ${CMAKE_CURRENT_LIST_DIR})
set(phx_float_dtypes f32 f16 bf16)
set(phx_all_dtypes f32 f16 bf16 i8 i16 i32 u8)

foreach(dtype IN LISTS phx_all_dtypes)
  string(TOUPPER ${dtype} X)
  foreach(op add sub mul)
    string(TOUPPER ${op} OP)
    phx_vulkan_shader(NAME ${op}_${dtype} SOURCE ${PHX_SHADER_DIR}/binary.comp
                      DEFINES X_${X} OP_${OP})
  endforeach()
  foreach(op sum max)
    string(TOUPPER ${op} OP)
    phx_vulkan_shader(NAME reduce_${op}_${dtype} SOURCE ${PHX_SHADER_DIR}/reduce.comp
                      DEFINES X_${X} OP_${OP})
  endforeach()
  foreach(to IN LISTS phx_all_dtypes)
    string(TOUPPER ${to} Y)
    phx_vulkan_shader(NAME cast_${dtype}_${to} SOURCE ${PHX_SHADER_DIR}/cast.comp
                      DEFINES X_${X} Y_${Y})
  endforeach()
endforeach()

foreach(dtype IN LISTS phx_all_dtypes)
  string(TOUPPER ${dtype} X)
  foreach(op max min equal less greater)
    string(TOUPPER ${op} OP)
    phx_vulkan_shader(NAME ${op}_${dtype} SOURCE ${PHX_SHADER_DIR}/binary.comp
                      DEFINES X_${X} OP_${OP})
  endforeach()
  foreach(op min)
    string(TOUPPER ${op} OP)
    phx_vulkan_shader(NAME reduce_${op}_${dtype} SOURCE ${PHX_SHADER_DIR}/reduce.comp
                      DEFINES X_${X} OP_${OP})
  endforeach()
  phx_vulkan_shader(NAME clip_${dtype} SOURCE ${PHX_SHADER_DIR}/unary.comp DEFINES X_${X} OP_CLIP)
  phx_vulkan_shader(NAME argmax_${dtype} SOURCE ${PHX_SHADER_DIR}/reduce.comp
                    DEFINES X_${X} Y_I32 OP_ARGMAX)
endforeach()

# The signed integers and the floats.
foreach(dtype f32 f16 bf16 i8 i16 i32)
  string(TOUPPER ${dtype} X)
  foreach(op relu neg abs sign)
    string(TOUPPER ${op} OP)
    phx_vulkan_shader(NAME ${op}_${dtype} SOURCE ${PHX_SHADER_DIR}/unary.comp DEFINES X_${X} OP_${OP})
  endforeach()
  phx_vulkan_shader(NAME reduce_prod_${dtype} SOURCE ${PHX_SHADER_DIR}/reduce.comp
                    DEFINES X_${X} OP_PROD)
endforeach()

phx_vulkan_shader(NAME not_u8 SOURCE ${PHX_SHADER_DIR}/unary.comp DEFINES X_U8 OP_NOT)

foreach(dtype IN LISTS phx_float_dtypes)
  string(TOUPPER ${dtype} X)
  phx_vulkan_shader(NAME div_${dtype} SOURCE ${PHX_SHADER_DIR}/binary.comp DEFINES X_${X} OP_DIV)
  phx_vulkan_shader(NAME gelu_${dtype} SOURCE ${PHX_SHADER_DIR}/unary.comp DEFINES X_${X} OP_GELU)
  foreach(op silu sigmoid tanh exp log sqrt erf floor ceil reciprocal softplus leaky_relu elu
             selu hard_sigmoid hard_swish sin cos round)
    string(TOUPPER ${op} OP)
    phx_vulkan_shader(NAME ${op}_${dtype} SOURCE ${PHX_SHADER_DIR}/unary.comp DEFINES X_${X} OP_${OP})
  endforeach()
  foreach(op pow prelu)
    string(TOUPPER ${op} OP)
    phx_vulkan_shader(NAME ${op}_${dtype} SOURCE ${PHX_SHADER_DIR}/binary.comp
                      DEFINES X_${X} OP_${OP})
  endforeach()
  phx_vulkan_shader(NAME reduce_mean_${dtype} SOURCE ${PHX_SHADER_DIR}/reduce.comp
                    DEFINES X_${X} OP_MEAN)
  phx_vulkan_shader(NAME log_softmax_${dtype} SOURCE ${PHX_SHADER_DIR}/softmax.comp
                    DEFINES X_${X} LOG)
  phx_vulkan_shader(NAME instance_norm_${dtype} SOURCE ${PHX_SHADER_DIR}/norm.comp
                    DEFINES X_${X} INSTANCE)
  phx_vulkan_shader(NAME batch_norm_${dtype} SOURCE ${PHX_SHADER_DIR}/batch_norm.comp
                    DEFINES X_${X})
  phx_vulkan_shader(NAME softmax_${dtype} SOURCE ${PHX_SHADER_DIR}/softmax.comp DEFINES X_${X})
  phx_vulkan_shader(NAME layer_norm_${dtype} SOURCE ${PHX_SHADER_DIR}/norm.comp DEFINES X_${X})
  phx_vulkan_shader(NAME rms_norm_${dtype} SOURCE ${PHX_SHADER_DIR}/norm.comp DEFINES X_${X} RMS)
  phx_vulkan_shader(NAME conv2d_${dtype} SOURCE ${PHX_SHADER_DIR}/conv2d.comp DEFINES X_${X})
  phx_vulkan_shader(NAME conv2d_window_${dtype} SOURCE ${PHX_SHADER_DIR}/conv2d_window.comp
                    DEFINES X_${X})
  phx_vulkan_shader(NAME conv_transpose2d_${dtype} SOURCE ${PHX_SHADER_DIR}/conv_transpose2d.comp
                    DEFINES X_${X})
  phx_vulkan_shader(NAME attention_${dtype} SOURCE ${PHX_SHADER_DIR}/attention.comp DEFINES X_${X})
  # CPU devices: its unrolled block of accumulators is 8 ROWS Dv <= 4,096 multiply-adds,
  # unrolled by the driver once Dv and ROWS are specialized.
  phx_vulkan_shader(NAME attention_direct_${dtype} SOURCE ${PHX_SHADER_DIR}/attention_direct.comp
                    DEFINES X_${X} DRIVER_UNROLLS)
  phx_vulkan_shader(NAME rope_${dtype} SOURCE ${PHX_SHADER_DIR}/rope.comp DEFINES X_${X})
  # matmul: inputs of dtype, output of dtype or f32; direct (CPU devices) or shared.
  set(outs ${dtype} f32)
  list(REMOVE_DUPLICATES outs)
  foreach(out IN LISTS outs)
    string(TOUPPER ${out} Y)
    phx_vulkan_shader(NAME matmul_shared_${dtype}_${out}
                      SOURCE ${PHX_SHADER_DIR}/matmul_shared.comp DEFINES X_${X} Y_${Y})
    # Its unrolled K step is 4,096 multiply-adds: unrolled by spirv-opt, -O takes a minute
    # and 8 GB per module; left to the driver, it runs as fast (docs/vulkan.md, "The
    # shader build").
    phx_vulkan_shader(NAME matmul_direct_${dtype}_${out}
                      SOURCE ${PHX_SHADER_DIR}/matmul_direct.comp DEFINES X_${X} Y_${Y}
                      DRIVER_UNROLLS)
    # One row (M = 1) on CPU devices.
    phx_vulkan_shader(NAME matvec_${dtype}_${out} SOURCE ${PHX_SHADER_DIR}/matvec.comp
                      DEFINES X_${X} Y_${Y})
  endforeach()
endforeach()

# The ops that move elements, never convert them (transpose, where, the layout ops): one
# module per element size, 1, 2 or 4 bytes, named <op>_<size>.
foreach(size_define 1:X_U8 2:X_I16 4:X_I32)
  string(REPLACE ":" ";" pair ${size_define})
  list(GET pair 0 size)
  list(GET pair 1 define)
  foreach(shader transpose where layout_copy layout_pad gather)
    phx_vulkan_shader(NAME ${shader}_${size} SOURCE ${PHX_SHADER_DIR}/${shader}.comp DEFINES ${define})
  endforeach()
endforeach()

# conv2d's columns for its matmul (ops/conv2d.cpp): the float sizes, 2 and 4 bytes.
phx_vulkan_shader(NAME im2col_2 SOURCE ${PHX_SHADER_DIR}/im2col.comp DEFINES X_I16)
phx_vulkan_shader(NAME im2col_4 SOURCE ${PHX_SHADER_DIR}/im2col.comp DEFINES X_I32)

# Pooling: max over every dtype, average over the float ones.
foreach(dtype IN LISTS phx_all_dtypes)
  string(TOUPPER ${dtype} X)
  phx_vulkan_shader(NAME max_pool_${dtype} SOURCE ${PHX_SHADER_DIR}/pool.comp DEFINES X_${X} OP_MAX)
endforeach()
foreach(dtype IN LISTS phx_float_dtypes)
  string(TOUPPER ${dtype} X)
  phx_vulkan_shader(NAME avg_pool_${dtype} SOURCE ${PHX_SHADER_DIR}/pool.comp DEFINES X_${X} OP_AVG)
endforeach()

# resize's passes: from x's dtype or f32, into f32 or x's dtype.
foreach(dtype IN LISTS phx_float_dtypes)
  set(pairs ${dtype}:${dtype} ${dtype}:f32 f32:${dtype})
  list(REMOVE_DUPLICATES pairs)
  foreach(pair IN LISTS pairs)
    string(REPLACE ":" ";" ends ${pair})
    list(GET ends 0 from)
    list(GET ends 1 to)
    string(TOUPPER ${from} X)
    string(TOUPPER ${to} Y)
    phx_vulkan_shader(NAME resize_${from}_${to} SOURCE ${PHX_SHADER_DIR}/resize.comp
                      DEFINES X_${X} Y_${Y})
  endforeach()
endforeach()

# The elementwise chains an executable fuses (f32; its program is specialization constants).
phx_vulkan_shader(NAME elementwise_program SOURCE ${PHX_SHADER_DIR}/elementwise_program.comp)

# The benchmark's own modules (bench/bench_vulkan.cpp runs them with raw Vulkan).
phx_vulkan_shader(NAME bench_naive_matmul SOURCE ${PHX_SHADER_DIR}/bench_naive_matmul.comp SET bench)
phx_vulkan_shader(NAME bench_empty SOURCE ${PHX_SHADER_DIR}/empty.comp SET bench)
