// The Catch2 main for the CPU tests (compiled once).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
