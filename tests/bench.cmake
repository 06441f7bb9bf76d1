# SPDX-License-Identifier: Apache-2.0
# bench/report.py's verdicts on the issue's targets, and bench/RESULTS.md against the CSV it names:
# Python's standard library only, no GPU.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME bench_report COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/test_report.py)
set_tests_properties(bench_report PROPERTIES LABELS bench)
# bench/strided_report.py's verdicts on the strided targets, on made-up CSVs.
add_test(NAME bench_strided_report COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/test_strided_report.py)
set_tests_properties(bench_strided_report PROPERTIES LABELS bench)
# bench/kernel_report.py's verdicts on the user-defined kernels' targets, on made-up CSVs.
add_test(NAME bench_kernel_report COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/test_kernel_report.py)
set_tests_properties(bench_kernel_report PROPERTIES LABELS bench)
# bench/python_bench.py's verdicts, exit status, files, dry run and timing loops, with fake runners.
add_test(NAME bench_python COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/bench/test_python_bench.py)
set_tests_properties(bench_python PROPERTIES LABELS bench)
# scripts/ab-compare.py's tables of two builds' results, on made-up CSVs of ew-bench-catalogue and ew-bench-strided.
add_test(NAME scripts_ab_compare COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/test_ab_compare.py)
set_tests_properties(scripts_ab_compare PROPERTIES LABELS bench)
