# The off-CPU tracer (sampler/offcpu.h): a BPF object embedded in the
# sampler (offcpu_obj.c includes its bytes; cmake/bpf.cmake builds it).
# Included from the root CMakeLists.txt after the sampler library.
ember_bpf_object(${PROJECT_SOURCE_DIR}/sampler/offcpu.bpf.c ${PROJECT_SOURCE_DIR}/sampler/offcpu_obj.c
  EMBER_OFFCPU_BPF_OBJECT "BPF off-CPU tracer" ${PROJECT_SOURCE_DIR}/sampler/offcpu_record.h)
target_sources(ember_sampler PRIVATE ${PROJECT_SOURCE_DIR}/sampler/offcpu.c ${PROJECT_SOURCE_DIR}/sampler/offcpu_obj.c)
target_link_libraries(ember_sampler PRIVATE PkgConfig::LIBBPF)
# Said by `ember --version`, in whatever links the tracer.
target_compile_definitions(ember_sampler INTERFACE EMBER_HAVE_BPF_OFFCPU=1)
