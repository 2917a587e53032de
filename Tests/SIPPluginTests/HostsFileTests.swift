import Logging
import ResilienceTesting
import Synchronization
import Testing

@testable import SIPPlugin

/// A registrar name the hosts file lists is answered as the system resolver answers it (glibc's
/// `hosts: files dns`), without asking a DNS server: a lab or a small site names its registrar
/// in /etc/hosts, and no NAPTR or SRV lookup may stand between it and the address.
@Suite struct HostsFileTests {
    @Test func addressesNamesAndAliasesAreReadAndCommentsAndGarbageIgnored() {
        let file = HostsFile(
            text: """
                # comment 198.51.100.1 commented
                198.51.100.7   Registrar.Lab.Test  alias.lab.test # trailing comment
                2001:db8::7\tregistrar.lab.test
                not-an-address broken.lab.test
                198.51.100.8
                """)
        #expect(file.addresses(of: "registrar.lab.test") == ["198.51.100.7", "2001:db8::7"])
        #expect(file.addresses(of: "ALIAS.lab.test") == ["198.51.100.7"])
        #expect(!file.lists("broken.lab.test"))
        #expect(!file.lists("commented"))
        #expect(!file.lists("198.51.100.8"))
    }

    @Test func aNameTheHostsFileListsIsResolvedWithoutAnyDNSLookup() async throws {
        let zone = RegistrarFailoverTests.CountingLookup()
        let directory = RegistrarDirectory(
            logger: Logger(label: "test"), lookup: zone.lookup,
            hosts: { HostsFile(text: "198.51.100.7 lab.test\n") },
            resolveListed: { host, port in host == "lab.test" && port == 5060 ? "198.51.100.7" : "0.0.0.0" })
        let targets = try await directory.targets(of: RegistrarFailoverTests.account, clock: ManualClock())
        #expect(targets.map(\.address) == ["198.51.100.7"])
        #expect(zone.calls.withLock { $0 } == 0, "a DNS server was asked for a name the hosts file lists")
        // A name it does not list goes to DNS as RFC 3263 says.
        let other = RegistrarDirectory(
            logger: Logger(label: "test"), lookup: zone.lookup, hosts: { HostsFile(text: "") },
            resolveListed: { _, _ in "0.0.0.0" })
        #expect(
            try await other.targets(of: RegistrarFailoverTests.account, clock: ManualClock()).map(\.address) == [
                "198.19.255.1"
            ])
        #expect(zone.calls.withLock { $0 } > 0)
    }
}
