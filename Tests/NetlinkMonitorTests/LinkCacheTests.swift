import ResilienceCore
import Testing

@testable import NetlinkMonitor

struct LinkCacheTests {
    let link = LinkState(ifindex: 3, name: "veth0", flags: 0x10043, operState: .up)
    let address = InterfaceAddress(ifindex: 3, family: .ipv4, address: "198.18.0.2", prefixLength: 24)
    let route = DefaultRoute(family: .ipv4, ifindex: 3, gateway: "198.18.0.1", metric: 0)

    var online: LinkCache {
        var cache = LinkCache()
        _ = cache.apply(.newLink(link))
        _ = cache.apply(.newAddress(address))
        _ = cache.apply(.newRoute([route], replace: false))
        return cache
    }

    @Test func repeatsProduceNoEvents() {
        var cache = online
        #expect(cache.apply(.newLink(link)).isEmpty)
        #expect(cache.apply(.newAddress(address)).isEmpty)
        #expect(cache.apply(.newRoute([route], replace: false)).isEmpty)
        #expect(
            cache.apply(
                .deletedAddress(InterfaceAddress(ifindex: 9, family: .ipv4, address: "198.18.9.9", prefixLength: 24))
            ).isEmpty)
    }

    @Test func aRenameIsALinkChange() {
        var cache = online
        var renamed = link
        renamed.name = "uplink"
        #expect(cache.apply(.newLink(renamed)) == [.linkChanged(from: link, to: renamed)])
        #expect(cache.snapshot.link(named: "uplink")?.ifindex == 3)
    }

    @Test func deletingALinkSaysWhatLeavesWithIt() {
        var cache = online
        #expect(
            cache.apply(.deletedLink(link)) == [
                .defaultRouteRemoved(route), .addressRemoved(address), .linkRemoved(link),
            ])
        #expect(cache.snapshot == .empty)
    }

    @Test func aReplacedRouteSupersedesTheOldOne() {
        var cache = online
        let replacement = DefaultRoute(family: .ipv4, ifindex: 3, gateway: "198.18.0.254", metric: 0)
        #expect(
            cache.apply(.newRoute([replacement], replace: true)) == [
                .defaultRouteRemoved(route), .defaultRouteAdded(replacement),
            ])
    }

    @Test func anECMPRouteAddsEachNextHopAndAReplaceKeepsTheHopsItNames() {
        var cache = online
        let second = DefaultRoute(family: .ipv4, ifindex: 4, gateway: "198.18.1.1", metric: 0)
        #expect(cache.apply(.newRoute([route, second], replace: true)) == [.defaultRouteAdded(second)])
        #expect(cache.snapshot.defaultRoutes.count == 2)
        #expect(cache.apply(.newRoute([second], replace: true)) == [.defaultRouteRemoved(route)])
        #expect(cache.apply(.deletedRoute([route, second])) == [.defaultRouteRemoved(second)])
        #expect(cache.snapshot.defaultRoutes.isEmpty)
    }

    @Test func adminDownAndIPv4AddressRemovalAskForARouteRecheck() {
        var cache = online
        var down = link
        down.flags &= ~0x1
        _ = cache.apply(.newLink(down))
        #expect(cache.routesNeedRecheck)
        cache.routesNeedRecheck = false
        _ = cache.apply(.deletedAddress(address))
        #expect(cache.routesNeedRecheck)
    }
}
