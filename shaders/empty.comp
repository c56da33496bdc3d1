// An empty dispatch: the benchmark's floor for the cost of one submission.
#version 450

layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Unused { float unused[]; };

void main() {}
