/* fixture.c: the shared object test_elf.c reads with elf.c and loads with dlopen: exported
 * functions and data, and a static function only the .symtab names. */
int fixture_data[16] = {1, 2, 3};
static int calls;

__attribute__((noinline)) static int fixture_local(int x) {
    calls++;
    return x * 3 + calls;
}

int fixture_add(int a, int b) {
    return a + b + fixture_local(a);
}

void *fixture_local_address(void) {
    return (void *)fixture_local;
}
