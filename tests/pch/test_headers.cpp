// SPDX-License-Identifier: GPL-3.0-or-later
// The one source of the targets that precompile the tests' common headers
// (tests/CMakeLists.txt, tr_test_headers): the tests reuse what it builds.
