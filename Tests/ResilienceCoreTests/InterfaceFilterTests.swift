import ResilienceCore
import Testing

struct InterfaceFilterTests {
    @Test(arguments: [
        ("eth*", "eth0", true), ("eth*", "wlan0", false), ("wl?n0", "wlan0", true), ("en[ops]*", "enp3s0", true),
        ("en[!p]*", "enp3s0", false), ("veth[0-9]", "veth7", true), ("veth[0-9]", "vethx", false),
        ("exact", "exact", true), ("exact", "exact2", false), ("*", "", true),
    ])
    func globsMatchLikeFnmatch(pattern: String, name: String, allowed: Bool) {
        let filter = InterfaceFilter([pattern])
        #expect(filter.allows(Fixture.link(2, name: name)) == allowed)
    }

    @Test func anEmptyFilterAllowsEverythingButLoopback() {
        var loopback = Fixture.link(1, name: "lo")
        loopback.flags |= 0x8
        #expect(InterfaceFilter.all.allows(Fixture.link(2)))
        #expect(!InterfaceFilter.all.allows(loopback))
        #expect(!InterfaceFilter(["l*"]).allows(loopback))
    }

    @Test func anyPatternMayAllowAnInterface() {
        let filter = InterfaceFilter(["wlan*", "eth1"])
        #expect(filter.allows(Fixture.link(1, name: "eth1")))
        #expect(filter.allows(Fixture.link(3, name: "wlan0")))
        #expect(!filter.allows(Fixture.link(4, name: "eth2")))
    }
}
