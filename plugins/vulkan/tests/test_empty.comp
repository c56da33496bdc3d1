// An empty dispatch: what one op costs the runtime with no work in it.
#version 450

layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Unused { float unused[]; };

void main() {}
