#ifndef CNETLINK_SHIM_H
#define CNETLINK_SHIM_H

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/msg.h>
#include <netlink/cache.h>
#include <netlink/route/link.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>
#include <netlink/route/rtnl.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>

#endif
