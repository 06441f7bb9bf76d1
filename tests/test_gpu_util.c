/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE /* setenv, fork, pipe */
/*
 * The skip rule of tests/gpu_util (label cpu: no GPU needed, none of this touches one). Each case runs
 * this program again, as `test_gpu_util group NAME [TEST]`, with stand-in tests that pass, fail or
 * skip, and checks the exit status main returns to ctest and the line the skip prints:
 *   - a run in which any test skipped and none failed exits 77 (ctest: skipped), never 0 (passed);
 *   - with EW_REQUIRE_GPU set, gu_skip(GU_SKIP, ...) fails the test (exit 1), and only the allow-list,
 *     GU_SKIP_ONE_GPU (a two-GPU test on a one-GPU machine), skips, saying so; "0" and "" mean unset;
 *   - a test named only runs when named, never in the plain run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu_util.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* ---- the stand-in tests that the child runs ---- */

static void passes(void **state)
{
    (void)state;
    assert_int_equal(1 + 1, 2);
}

static void fails(void **state)
{
    (void)state;
    fail_msg("a stand-in failure");
}

static void skips(void **state)
{
    (void)state;
    gu_skip(GU_SKIP, "a stand-in skip");
}

static void skips_one_gpu(void **state)
{
    (void)state;
    gu_skip(GU_SKIP_ONE_GPU, "a stand-in two-GPU test");
}

static const struct {
    const char *name;
    struct CMUnitTest tests[2];
    size_t count, named_only;
} groups[] = {
    {"pass", {cmocka_unit_test(passes)}, 1, 0},
    {"pass_skip", {cmocka_unit_test(passes), cmocka_unit_test(skips)}, 2, 0},
    {"pass_skip_one_gpu", {cmocka_unit_test(passes), cmocka_unit_test(skips_one_gpu)}, 2, 0},
    {"fail_skip", {cmocka_unit_test(fails), cmocka_unit_test(skips)}, 2, 0},
    {"pass_named_skip", {cmocka_unit_test(passes), cmocka_unit_test(skips)}, 2, 1}, /* skips: named only */
};

static int run_group(int argc, char **argv)
{
    for (size_t g = 0; g < COUNT(groups); ++g)
        if (strcmp(argv[2], groups[g].name) == 0) {
            /* gu_run_tests sees "PROGRAM [TEST]" */
            argv[2] = argv[0];
            return gu_run_tests(groups[g].name, groups[g].tests, groups[g].count, groups[g].named_only,
                                argc - 2, argv + 2);
        }
    fprintf(stderr, "%s: no group named %s\n", argv[0], argv[2]);
    return 2;
}

/* ---- the cases: the child's exit status and output ---- */

typedef struct {
    int status;
    char output[16384];
} child_t;

/* Runs `this-program group GROUP [TEST]` with EW_REQUIRE_GPU set to `require` (NULL: unset). */
static child_t run_child(const char *require, const char *group, const char *test)
{
    child_t child = {.status = -1};
    int pipe_fds[2];
    assert_int_equal(pipe(pipe_fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pipe_fds[1], STDOUT_FILENO);
        dup2(pipe_fds[1], STDERR_FILENO);
        close(pipe_fds[0]);
        if (require != NULL)
            setenv("EW_REQUIRE_GPU", require, 1);
        else
            unsetenv("EW_REQUIRE_GPU");
        char *args[] = {"test_gpu_util", "group", (char *)group, (char *)test, NULL};
        execv("/proc/self/exe", args);
        _exit(126);
    }
    close(pipe_fds[1]);
    size_t length = 0;
    ssize_t got;
    while ((got = read(pipe_fds[0], child.output + length, sizeof child.output - 1 - length)) > 0)
        length += (size_t)got;
    child.output[length] = '\0';
    close(pipe_fds[0]);
    int wait_status;
    assert_int_equal(waitpid(pid, &wait_status, 0), pid);
    assert_true(WIFEXITED(wait_status));
    child.status = WEXITSTATUS(wait_status);
    return child;
}

static void expect(const char *require, const char *group, const char *test, int status, const char *line)
{
    child_t child = run_child(require, group, test);
    if (child.status != status || (line != NULL && strstr(child.output, line) == NULL))
        fail_msg("EW_REQUIRE_GPU=%s, group %s%s%s: exit %d, expected %d%s%s; its output:\n%s",
                 require ? require : "(unset)", group, test ? ", test " : "", test ? test : "", child.status, status,
                 line ? " and a line with " : "", line ? line : "", child.output);
}

static void without_require_gpu(void **state)
{
    (void)state;
    expect(NULL, "pass", NULL, 0, NULL);
    expect(NULL, "pass_skip", NULL, 77, "SKIP: a stand-in skip");
    expect(NULL, "pass_skip", "skips", 77, "SKIP: a stand-in skip");
    expect(NULL, "pass_skip", "passes", 0, NULL);
    expect(NULL, "pass_skip_one_gpu", NULL, 77, "SKIP: a stand-in two-GPU test");
    expect(NULL, "fail_skip", NULL, 1, NULL);
    expect(NULL, "pass_named_skip", NULL, 0, NULL);
    expect(NULL, "pass_named_skip", "skips", 77, "SKIP: a stand-in skip");
    expect("0", "pass_skip", NULL, 77, "SKIP: a stand-in skip");
    expect("", "pass_skip", NULL, 77, "SKIP: a stand-in skip");
}

static void with_require_gpu(void **state)
{
    (void)state;
    expect("1", "pass", NULL, 0, NULL);
    expect("1", "pass_skip", NULL, 1, "FAIL: a stand-in skip: a skip, and EW_REQUIRE_GPU is set");
    expect("1", "pass_skip", "skips", 1, "FAIL: a stand-in skip");
    expect("1", "pass_skip_one_gpu", NULL, 77,
           "SKIP: a stand-in two-GPU test (allowed with EW_REQUIRE_GPU: a two-GPU test on a one-GPU machine)");
    expect("1", "fail_skip", NULL, 1, NULL);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && argc <= 4 && strcmp(argv[1], "group") == 0)
        return run_group(argc, argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(without_require_gpu), cmocka_unit_test(with_require_gpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
