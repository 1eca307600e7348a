SUMMARY = "Suffix-array construction library"
DESCRIPTION = "Builds suffix arrays in O(n log n); eqota-gen's bsdiff-class delta method uses it."
HOMEPAGE = "https://github.com/y-256/libdivsufsort"
LICENSE = "MIT"
LIC_FILES_CHKSUM = "file://LICENSE;md5=e261f081e52882dad3ff0225497ce451"

SRC_URI = "git://github.com/y-256/libdivsufsort.git;protocol=https;branch=master"
# "release v2.0.2-1" and the merge after it
SRCREV = "5f60d6f026c30fb4ac296f696b3c8b0eb71bd428"

inherit cmake

# The project asks for CMake 2.4; newer CMake refuses that without a floor.
EXTRA_OECMAKE = "-DBUILD_EXAMPLES=OFF -DCMAKE_POLICY_VERSION_MINIMUM=3.5"

BBCLASSEXTEND = "native nativesdk"
