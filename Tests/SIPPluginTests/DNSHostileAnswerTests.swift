import Logging
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The RFC 3263 resolver against a DNS server that answers badly (a scripted one on loopback):
/// targets no client should contact, a NAPTR set too large to use, answers longer than NIO's
/// default 2,048-byte read, and answers with TC.
@Suite(.timeLimit(.minutes(3)))
struct DNSHostileAnswerTests {
    static let domain = "lab.test"

    static func srv(_ name: String, _ target: String, port: UInt16, priority: UInt16 = 10) -> DNSRecord {
        DNSRecord(name: name, ttl: 60, data: .srv(priority: priority, weight: 0, port: port, target: target))
    }

    static func a(_ name: String, _ address: String) -> DNSRecord { DNSRecord(name: name, ttl: 60, data: .a(address)) }

    static let account = SIPAccount(
        name: "dns", registrarHost: domain, transport: .udp, user: "dns", domain: domain, password: "secret",
        expires: 300)

    /// The targets the directory gives the account, through the scripted server.
    static func targets(
        _ server: ScriptedDNSServer, own: Set<String> = [], logger: Logger = Logger(label: "dns")
    ) async throws -> [SIPTarget] {
        let configuration = server.configuration
        let directory = RegistrarDirectory(
            logger: logger,
            lookup: { name, type in
                try await DNSClient(configuration: configuration).lookup(name, type, clock: ContinuousClock())
            }, hosts: { HostsFile(text: "") })
        directory.networkChanged(ownAddresses: own)
        return try await directory.targets(of: account, clock: ContinuousClock())
    }

    /// RFC 3263 §4.2 gives an SRV target's A records as the addresses to contact; none that is
    /// unspecified, loopback, multicast, broadcast or this client's own is one a registrar
    /// means: each is skipped, with one line naming its record, and the good one is used.
    @Test func targetsNoClientShouldContactAreSkippedAndNamed() async throws {
        let bad = ["0.0.0.0", "127.0.0.1", "224.0.0.1", "255.255.255.255", "198.18.5.5", "::1", "ff02::1", "::"]
        let server = try ScriptedDNSServer { name, type in
            switch (name, type) {
            case ("_sip._udp.lab.test", .srv):
                return .init(answers: [
                    Self.srv(name, "bad.lab.test", port: 5060),
                    Self.srv(name, "good.lab.test", port: 5070, priority: 20),
                ])
            case ("bad.lab.test", .a): return .init(answers: bad.filter { !$0.contains(":") }.map { Self.a(name, $0) })
            case ("bad.lab.test", .aaaa):
                return .init(
                    answers: bad.filter { $0.contains(":") }.map { DNSRecord(name: name, ttl: 60, data: .aaaa($0)) })
            case ("good.lab.test", .a): return .init(answers: [Self.a(name, "198.19.255.1")])
            default: return .init()
            }
        }
        defer { server.stop() }
        let records = LogRecords()
        let logger = Logger(label: "dns") { _ in RecordingLogHandler(records) }
        let targets = try await Self.targets(server, own: ["198.18.5.5"], logger: logger)
        #expect(targets.map(\.address) == ["198.19.255.1"])
        let refused = records.named("sip.dns-target-refused")
        #expect(Set(refused.compactMap { $0.metadata["address"]?.description }) == Set(bad), "\(refused)")
        #expect(refused.allSatisfy { $0.metadata["record"]?.description == "bad.lab.test" })
    }

    /// RFC 3263 §4.1: "If no NAPTR records are found, the client constructs SRV queries". A
    /// NAPTR set of 300 records (over TCP, as its datagram says TC) is more than this resolver
    /// reads: it is no usable NAPTR, and the SRV records give the target, instead of the whole
    /// resolution failing.
    @Test func aNAPTRSetTooLargeToUseFallsBackToSRV() async throws {
        let server = try ScriptedDNSServer { name, type in
            switch (name, type) {
            case ("lab.test", .naptr):
                let records = (0..<300).map { index in
                    DNSRecord(
                        name: name, ttl: 60,
                        data: .naptr(
                            order: UInt16(index), preference: 0, flags: "s", service: "sip+d2u", regexp: "",
                            replacement: "_sip._udp.lab.test"))
                }
                return .init(answers: records, truncatedOverUDPAfter: 0)
            case ("_sip._udp.lab.test", .srv): return .init(answers: [Self.srv(name, "sip.lab.test", port: 5080)])
            case ("sip.lab.test", .a): return .init(answers: [Self.a(name, "198.19.255.2")])
            default: return .init()
            }
        }
        defer { server.stop() }
        let targets = try await Self.targets(server)
        #expect(targets.map(\.address) == ["198.19.255.2"] && targets.map(\.port) == [5080])
        #expect(server.questions.contains { $0.name == "lab.test" && $0.tcp }, "the NAPTR set was asked over TCP")
    }

    /// An SRV answer of 3.5 KB in one datagram without TC (the query advertised 1,232 bytes; a
    /// server may still send more): read whole, not cut at NIO's default 2,048 bytes.
    @Test func aDatagramLongerThanTwoKilobytesIsReadWhole() async throws {
        let server = try ScriptedDNSServer { name, type in
            switch (name, type) {
            case ("_sip._udp.lab.test", .srv):
                return .init(answers: (0..<100).map { Self.srv(name, "sip\($0).lab.test", port: UInt16(5_000 + $0)) })
            case (_, .a) where name.hasPrefix("sip"): return .init(answers: [Self.a(name, "198.19.255.3")])
            default: return .init()
            }
        }
        defer { server.stop() }
        let targets = try await Self.targets(server)
        #expect(targets.count == SIPServerLocator.maximumTargets)
        #expect(!server.questions.contains { $0.tcp }, "no TCP was needed: the datagram was whole")
    }

    /// RFC 7766 §5: a truncated answer is retried over TCP ("the client SHOULD retry the query
    /// over TCP"): the three SRV records behind a TC datagram with one are all used.
    @Test func anAnswerWithTCIsAskedAgainOverTCP() async throws {
        let server = try ScriptedDNSServer { name, type in
            switch (name, type) {
            case ("_sip._udp.lab.test", .srv):
                let records = (0..<3).map { Self.srv(name, "sip.lab.test", port: UInt16(5_060 + $0)) }
                return .init(answers: records, truncatedOverUDPAfter: 1)
            case ("sip.lab.test", .a): return .init(answers: [Self.a(name, "198.19.255.4")])
            default: return .init()
            }
        }
        defer { server.stop() }
        let targets = try await Self.targets(server)
        #expect(Set(targets.map(\.port)) == [5_060, 5_061, 5_062])
        #expect(server.questions.contains { $0.name == "_sip._udp.lab.test" && $0.tcp })
    }
}
