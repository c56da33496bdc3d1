// Flat indices over a 1-D grid that the host launches as groups_x * groups_y workgroups
// (ops/op_util.h, dispatch_grid): a grid wider than maxComputeWorkGroupCount[0]
// continues in y. The including shader defines GRID_WORKGROUP, its local_size_x: Debian
// 12's spirv-opt -O folds gl_WorkGroupSize.x to 1 here, so it is not used.

#ifndef GRID_GLSL
#define GRID_GLSL

uint flat_workgroup() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

uint flat_invocation() {
  return flat_workgroup() * GRID_WORKGROUP + gl_LocalInvocationID.x;
}

#endif  // GRID_GLSL
