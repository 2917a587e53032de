#ifndef CNETLINK_SHIM_H
#define CNETLINK_SHIM_H

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/version.h>
#include <netlink/socket.h>
#include <netlink/msg.h>
#include <netlink/cache.h>
#include <netlink/route/link.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>
#include <netlink/route/rtnl.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>

/// Moves the calling thread into the network namespace open at `fd` (setns(2) with
/// CLONE_NEWNET). Declared here because glibc hides setns without _GNU_SOURCE.
static inline int cnetlink_enter_net_namespace(int fd) {
    extern int setns(int fd, int nstype);
    return setns(fd, 0x40000000 /* CLONE_NEWNET */);
}

#endif
