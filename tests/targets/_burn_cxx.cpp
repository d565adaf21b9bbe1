// A C++ function template burning CPU, for the native-frames test of C++ names
// (tests/integration/test_native_frames.py): its symbol is mangled in the library
// (_ZN6burnpp4spinIdLi3EEET_PS1_l) and must be demangled in the profile
// ("double burnpp::spin<double, 3>(double*, long)") and shortened in the terminal report
// ("burnpp::spin<…>(…)"). Built with g++ -shared, so it needs libstdc++, which ctypes loads
// privately (RTLD_LOCAL) as Python extensions' dependencies are.
#include <vector>

namespace burnpp {

template <typename T, int Rounds>
__attribute__((noipa)) T spin(T *values, long count) {
    T total = 0;
    for (int round = 0; round < Rounds; round++)
        for (long i = 0; i < count; i++) total = total * T(0.999) + values[i]; // serial
    return total;
}

} // namespace burnpp

extern "C" double burn_cxx(long count, int repeats) {
    std::vector<double> values(count, 0.5);
    double total = 0;
    for (int r = 0; r < repeats; r++) total += burnpp::spin<double, 3>(values.data(), count);
    return total;
}
