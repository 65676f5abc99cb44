// Catch2 2 is header-only and needs one file to define main(); Catch2 3 brings its own.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
