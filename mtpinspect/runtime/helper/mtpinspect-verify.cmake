# Adds the mtpinspect-verify target to the pinned llama.cpp build, next to llama-server.
# Passed as -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>: CMake runs it at the end of llama.cpp's
# project() call, so the vendored tree is built as it is, unpatched. The targets it links
# (llama-common, llama) are defined later in the same configure; CMake resolves them when it generates.
if(NOT TARGET mtpinspect-verify)
    add_executable(mtpinspect-verify EXCLUDE_FROM_ALL "${CMAKE_CURRENT_LIST_DIR}/mtpinspect-verify.cpp")
    # llama-ext.h (the memory breakdown) lives in src/, as for llama.cpp's own tools.
    target_include_directories(mtpinspect-verify PRIVATE "${PROJECT_SOURCE_DIR}/src")
    target_link_libraries(mtpinspect-verify PRIVATE llama-common llama)
    target_compile_features(mtpinspect-verify PRIVATE cxx_std_17)
    # Next to llama-server in bin/ (llama.cpp sets its output folder only after project()).
    set_target_properties(mtpinspect-verify PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")
    if(LLAMA_BUILD_COMMIT)
        target_compile_definitions(mtpinspect-verify PRIVATE MTPINSPECT_LLAMA_COMMIT="${LLAMA_BUILD_COMMIT}")
    endif()
endif()
