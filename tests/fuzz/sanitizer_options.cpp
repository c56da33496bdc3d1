// The sanitizers' settings of every fuzzer, compiled in so that no caller has to set
// ASAN_OPTIONS or LSAN_OPTIONS. The runtime, a shared library of its own, looks these up
// dynamically: they must be visible.
#define PHX_VISIBLE extern "C" __attribute__((visibility("default")))

// The fuzz preset links the sanitizer runtime as a shared library (-shared-libasan),
// because libphynexus and the plugins are linked with --no-undefined and clang's static
// runtime would leave its symbols undefined in them. The driver then lists libstdc++
// before that runtime for libFuzzer, which ASan's start-up check refuses although
// interposition works: the runtime still comes before libc.
PHX_VISIBLE const char* __asan_default_options() { return "verify_asan_link_order=0"; }

// Mesa's lavapipe keeps allocations where LeakSanitizer does not look for pointers to
// them; the stack names only the driver. Leaks of our own code never pass through it.
PHX_VISIBLE const char* __lsan_default_suppressions() { return "leak:libvulkan_lvp.so\n"; }
