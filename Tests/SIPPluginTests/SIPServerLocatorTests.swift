import ResilienceCore
import Synchronization
import Testing

@testable import SIPPlugin

/// RFC 3263 §4 as the locator applies it, over a zone in memory (the lookup is the I/O outside).
@Suite
struct SIPServerLocatorTests {
    /// A zone: what each (name, type) answers; every question asked is kept.
    final class Zone: Sendable {
        let records: [String: [DNSRecord]]
        let asked = Mutex<[String]>([])

        init(_ records: [DNSRecord]) {
            var byKey: [String: [DNSRecord]] = [:]
            for record in records { byKey[Self.key(record.name, record.data.type), default: []].append(record) }
            self.records = byKey
        }

        static func key(_ name: String, _ type: DNSRecordType) -> String { "\(type) \(name)" }

        var lookup: SIPServerLocator.Lookup {
            { name, type in
                self.asked.withLock { $0.append(Self.key(name, type)) }
                return self.records[Self.key(name, type)] ?? []
            }
        }
    }

    static func srv(_ name: String, _ target: String, priority: UInt16, weight: UInt16 = 10, ttl: UInt32 = 300)
        -> DNSRecord
    {
        DNSRecord(name: name, ttl: ttl, data: .srv(priority: priority, weight: weight, port: 5060, target: target))
    }

    static func a(_ name: String, _ address: String, ttl: UInt32 = 300) -> DNSRecord {
        DNSRecord(name: name, ttl: ttl, data: .a(address))
    }

    static func naptr(_ service: String, order: UInt16, _ replacement: String) -> DNSRecord {
        DNSRecord(
            name: "lab.test", ttl: 300,
            data: .naptr(
                order: order, preference: 10, flags: "s", service: service, regexp: "", replacement: replacement))
    }

    static let zone = Zone([
        naptr("sip+d2t", order: 10, "_sip._tcp.lab.test"), naptr("sip+d2u", order: 20, "_sip._udp.lab.test"),
        srv("_sip._udp.lab.test", "backup.lab.test", priority: 20),
        srv("_sip._udp.lab.test", "primary.lab.test", priority: 10, ttl: 30),
        srv("_sip._tcp.lab.test", "tcp.lab.test", priority: 10),
        a("primary.lab.test", "198.19.255.1"), a("backup.lab.test", "198.19.255.2", ttl: 120),
        a("tcp.lab.test", "198.19.255.3"),
    ])

    @Test func aNameWithoutPortGoesNAPTRThenSRVInPriorityOrderThenAddresses() async throws {
        let locator = SIPServerLocator(host: "lab.test", port: nil, secure: false, supported: [.udp])
        let (targets, ttl) = try await locator.resolve(lookup: Self.zone.lookup)
        // The better NAPTR (order 10) is TCP, which this client does not use: UDP's is taken.
        #expect(targets.map(\.address) == ["198.19.255.1", "198.19.255.2"])
        #expect(targets.allSatisfy { $0.transport == .udp && $0.port == 5060 })
        #expect(ttl == 30, "the smallest TTL of the records used")
        #expect(Self.zone.asked.withLock { $0.first } == "naptr lab.test")
    }

    @Test func aClientOfBothTransportsTakesTheNAPTRWithTheLowestOrder() async throws {
        let locator = SIPServerLocator(host: "lab.test", port: nil, secure: false, supported: [.udp, .tcp])
        let (targets, _) = try await locator.resolve(lookup: Self.zone.lookup)
        #expect(targets.first == SIPTarget(name: "tcp.lab.test", address: "198.19.255.3", port: 5060, transport: .tcp))
    }

    @Test func withoutNAPTRTheSRVRecordsOfTheTransportAreAsked() async throws {
        let zone = Zone([
            Self.srv("_sip._udp.plain.test", "primary.lab.test", priority: 1),
            Self.a("primary.lab.test", "198.19.255.1"),
        ])
        let locator = SIPServerLocator(host: "plain.test", port: nil, secure: false, supported: [.udp])
        #expect(try await locator.resolve(lookup: zone.lookup).targets.map(\.address) == ["198.19.255.1"])
    }

    /// RFC 3263 §4.2: "If the TARGET was a numeric IP address, the client uses that address" and
    /// "if a port is present in the URI, the client performs an A or AAAA record lookup".
    @Test func anIPLiteralIsNotLookedUpAndAnExplicitPortSkipsNAPTRAndSRV() async throws {
        let zone = Zone([Self.a("lab.test", "198.19.255.9")])
        let literal = SIPServerLocator(host: "198.19.255.1", port: nil, secure: false, supported: [.udp])
        #expect(try await literal.resolve(lookup: zone.lookup).targets.map(\.address) == ["198.19.255.1"])
        #expect(zone.asked.withLock { $0.isEmpty })
        let withPort = SIPServerLocator(host: "lab.test", port: 5080, secure: false, supported: [.udp])
        let targets = try await withPort.resolve(lookup: zone.lookup).targets
        #expect(targets.map(\.port) == [5080] && targets.map(\.address) == ["198.19.255.9"])
        #expect(zone.asked.withLock { $0 } == ["a lab.test", "aaaa lab.test"])
    }

    @Test func withNeitherNAPTRNorSRVTheNameItselfIsUsedOnTheDefaultPort() async throws {
        let zone = Zone([Self.a("sips.test", "198.19.255.7")])
        let locator = SIPServerLocator(host: "sips.test", port: nil, secure: true, supported: [.tls])
        let targets = try await locator.resolve(lookup: zone.lookup).targets
        #expect(targets == [SIPTarget(name: "sips.test", address: "198.19.255.7", port: 5061, transport: .tls)])
        #expect(zone.asked.withLock { $0.contains("srv _sips._tcp.sips.test") })
    }

    /// RFC 2782: "A client MUST attempt to contact the target host with the lowest-numbered
    /// priority it can reach"; within one priority, by weight: a uniform random number in
    /// 0...sum picks the first record whose running sum reaches it.
    @Test func srvRecordsAreOrderedByPriorityThenByWeightedChoice() {
        let entries: [SIPServerLocator.SRVEntry] = [
            .init(priority: 20, weight: 0, port: 1, target: "late"),
            .init(priority: 10, weight: 90, port: 2, target: "heavy"),
            .init(priority: 10, weight: 10, port: 3, target: "light"),
        ]
        // Random 0 picks the first of the weight-sorted list (light: running sum 10 ≥ 0).
        #expect(SIPServerLocator.ordered(entries, random: { _ in 0 }).map(\.target) == ["light", "heavy", "late"])
        // A number above 10 reaches "heavy" first.
        #expect(SIPServerLocator.ordered(entries, random: { $0 }).map(\.target) == ["heavy", "light", "late"])
        var heavyFirst = 0
        for _ in 0..<1000 where SIPServerLocator.ordered(entries, random: { .random(in: 0...$0) })[0].target == "heavy"
        {
            heavyFirst += 1
        }
        #expect((800...980).contains(heavyFirst), "weight 90 of 100 came first \(heavyFirst) times in 1000")
    }

    @Test func anSRVTargetOfDotMeansTheServiceIsNotOffered() async throws {
        let zone = Zone([Self.srv("_sip._udp.none.test", "", priority: 0), Self.a("none.test", "198.19.255.8")])
        let locator = SIPServerLocator(host: "none.test", port: nil, secure: false, supported: [.udp])
        #expect(try await locator.resolve(lookup: zone.lookup).targets.map(\.address) == ["198.19.255.8"])
    }
}

extension DNSRecordData {
    var type: DNSRecordType {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .cname: .cname
        case .srv: .srv
        case .naptr: .naptr
        case .other: .cname
        }
    }
}
