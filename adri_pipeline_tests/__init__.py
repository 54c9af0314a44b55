"""The tests mirror the package, a folder per subpackage. What two test files share (an example, a file
writer, a browser) lives in that folder's helpers.py, or in a conftest.py fixture; never in a test_*
module, which is there to be collected (test_layout.py fails on a module of the tests importing one)."""
