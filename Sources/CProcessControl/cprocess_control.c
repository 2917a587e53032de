// prctl, pipe2 and setns are variadic or need _GNU_SOURCE, so Swift's Glibc module does not offer them.
#define _GNU_SOURCE
#include "cprocess_control.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

int cprocess_set_child_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

int cprocess_is_child_subreaper(void) {
    int flag = 0;
    if (prctl(PR_GET_CHILD_SUBREAPER, &flag, 0, 0, 0) != 0) return -1;
    return flag != 0;
}

int cprocess_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int cprocess_enter_netns(int fd) { return setns(fd, CLONE_NEWNET); }
