# SPDX-License-Identifier: GPL-3.0-or-later
# The fuzz targets' corpora as CTest tests in the normal build (any
# compiler, no libFuzzer): each target's source with fuzz_replay_main.cpp,
# against the engine's own libraries, run over its checked-in corpus.
# Included at the end of tests/CMakeLists.txt; see tests/fuzz/README.md.
set(TR_FUZZ_DIR ${CMAKE_SOURCE_DIR}/tests/fuzz)

# tr_add_fuzz_replay(TARGET NAME LIBRARIES... INPUTS...): TARGET.cpp as
# TARGET_replay, the test fuzz.replay.NAME over corpus/NAME and INPUTS.
function(tr_add_fuzz_replay target name)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "LIBRARIES;INPUTS")
  add_executable(${target}_replay ${TR_FUZZ_DIR}/${target}.cpp ${TR_FUZZ_DIR}/fuzz_replay_main.cpp)
  set_target_properties(${target}_replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_include_directories(${target}_replay PRIVATE ${TR_FUZZ_DIR})
  target_link_libraries(${target}_replay PRIVATE ${arg_LIBRARIES} tr_warnings)
  add_test(NAME fuzz.replay.${name}
           COMMAND ${target}_replay ${TR_FUZZ_DIR}/corpus/${name} ${arg_INPUTS})
  set_tests_properties(fuzz.replay.${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endfunction()

tr_add_fuzz_replay(fuzz_project_parser project LIBRARIES tr_engine_internals
                   INPUTS ${TR_TEST_DATA}/broken)
tr_add_fuzz_replay(fuzz_checkpoint_reader checkpoint LIBRARIES tr_engine_internals ZLIB::ZLIB)
tr_add_fuzz_replay(fuzz_idx_reader idx LIBRARIES tr_engine_internals)
tr_add_fuzz_replay(fuzz_image_decode image LIBRARIES tr_engine_internals)
tr_add_fuzz_replay(fuzz_onnx_import onnx LIBRARIES tr_engine_internals)
tr_add_fuzz_replay(fuzz_run_store_json run_store_json
                   LIBRARIES tr_engine_internals SQLite::SQLite3)
# The trace reader is the workbench's.
if(TR_GUI AND TARGET tr_gui_timeline)
  tr_add_fuzz_replay(fuzz_chrome_trace chrome_trace LIBRARIES tr_gui_timeline)
endif()
