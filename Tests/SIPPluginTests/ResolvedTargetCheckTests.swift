import Testing

@testable import SIPPlugin

/// Which addresses from DNS are never a server (RFC 6890's special-purpose ranges that are not
/// unicast or not forwardable, and this client's own).
struct ResolvedTargetCheckTests {
    @Test(arguments: [
        ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"), ("127.0.0.1", "loopback"), ("127.9.9.9", "loopback"),
        ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("255.255.255.255", "broadcast"),
        ("::", "unspecified"), ("::1", "loopback"), ("ff02::1", "multicast"), ("::ffff:127.0.0.1", "loopback"),
        ("[::1]", "loopback"), ("198.18.5.5", "this client's own address"),
        ("2001:db8:0:0::5", "this client's own address"), ("example.com", "not an IP address"),
    ])
    func anAddressNoServerHasIsRefusedWithItsReason(address: String, reason: String) {
        let check = ResolvedTargetCheck(ownAddresses: ["198.18.5.5", "2001:db8::5"])
        #expect(check.problem(with: address) == reason)
    }

    @Test(arguments: ["198.19.255.1", "2001:db8::1", "fe80::1%eth0", "198.18.5.6"])
    func aUnicastAddressOfAnotherHostIsUsed(address: String) {
        #expect(ResolvedTargetCheck(ownAddresses: ["198.18.5.5"]).problem(with: address) == nil)
    }

    @Test func loopbackIsAllowedOnlyWhenAsked() {
        #expect(ResolvedTargetCheck.allowingLoopback.problem(with: "127.0.0.1") == nil)
        #expect(ResolvedTargetCheck.allowingLoopback.problem(with: "0.0.0.0") == "unspecified")
    }
}
