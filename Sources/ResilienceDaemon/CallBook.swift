public import ResilienceCore
import ResilienceOutput
public import SIPPlugin

/// One call as `netres ctl calls` shows it.
///
/// Invariant: `peer` is stored as the agent reported it (from the wire for an incoming call);
/// every rendering escapes it (`LogText`). Nothing here can hold a credential.
public struct CallRecord: Hashable, Sendable {
    public var id: CallID
    public var account: String
    public var peer: String
    public var phase: CallPhase
    public var direction: CallDirection
    /// `address:port` of the call's RTP socket; nil before it has media (ringing in).
    public var mediaAddress: String?
    /// RTP packets the call's media session received; nil before it has media.
    public var packetsReceived: Int?
    /// The last recovery of this call after a network change: the agent's (`recovered at TIME:
    /// downtime 3.1s, re-INVITE 40ms, recovery 3.2s, 0 glare retries`) or a policy action that
    /// failed (`reinvite-call failed at TIME`); nil when none was needed yet.
    public var lastRecovery: String?

    public init(
        id: CallID, account: String, peer: String, phase: CallPhase, direction: CallDirection,
        mediaAddress: String? = nil, packetsReceived: Int? = nil, lastRecovery: String? = nil
    ) {
        self.id = id
        self.account = account
        self.peer = peer
        self.phase = phase
        self.direction = direction
        self.mediaAddress = mediaAddress
        self.packetsReceived = packetsReceived
        self.lastRecovery = lastRecovery
    }
}

/// The calls that are not over, as the agents' call events tell them: a value state machine,
/// no I/O. The book keeps each call's last event, not a state of its own: a call's phase,
/// peer and direction are its last event's.
///
/// Invariants: an `ended` event removes its call; a call is known under exactly one account;
/// at most ``capacity`` calls are kept (the agents' dialog tables bound them too; an event for a
/// new call past the bound is ignored and counted in ``overflow``).
struct CallBook {
    static let capacity = 1024
    /// The last event of each call not over, with its account.
    private var latest: [CallID: (account: String, event: CallEvent)] = [:]
    /// The last recovery of each call, as `netres ctl calls` shows it.
    private var recoveries: [CallID: String] = [:]
    /// Insertion order, so listings are stable.
    private var order: [CallID] = []
    private(set) var overflow = 0

    /// The service each call is reported under (`SIPAccount.callService(_:)`).
    private var services: [ServiceID: CallID] = [:]

    /// Applies one event of `account`'s agent; returns true when the call is new.
    @discardableResult
    mutating func apply(_ event: CallEvent, account: SIPAccount, at now: String = "") -> Bool {
        guard event.phase != .ended else {
            if latest.removeValue(forKey: event.call) != nil {
                recoveries[event.call] = nil
                order.removeAll { $0 == event.call }
                services = services.filter { $0.value != event.call }
            }
            return false
        }
        if latest[event.call] != nil {
            latest[event.call]?.event = event
            if event.trigger == "network" { recoveries[event.call] = Self.recovery(event, at: now) }
            return false
        }
        guard latest.count < Self.capacity else {
            overflow += 1
            return false
        }
        latest[event.call] = (account.name, event)
        order.append(event.call)
        services[account.callService(event.call)] = event.call
        return true
    }

    /// `recovered at TIME: downtime 3.1s, re-INVITE 40ms, recovery 3.2s, 0 glare retries`.
    static func recovery(_ event: CallEvent, at now: String) -> String {
        let parts = [
            event.downtime.map { "downtime \(DurationText.format($0))" },
            event.reinviteRoundTrip.map { "re-INVITE \(DurationText.format($0))" },
            event.recoveryTime.map { "recovery \(DurationText.format($0))" },
            "\(event.glareRetries) glare retries",
        ]
        return "recovered at \(now): " + parts.compactMap { $0 }.joined(separator: ", ")
    }

    /// The call a service id names (`<account>.call.<id>`), if it is in the book.
    func call(of service: ServiceID) -> CallID? { services[service] }

    mutating func recordRecovery(_ text: String, of service: ServiceID) {
        guard let id = call(of: service), latest[id] != nil else { return }
        recoveries[id] = text
    }

    /// The call `id` as its last event tells it, if it is not over.
    func record(_ id: CallID) -> CallRecord? {
        guard let (account, event) = latest[id] else { return nil }
        return CallRecord(
            id: id, account: account, peer: event.peer, phase: event.phase, direction: event.direction,
            lastRecovery: recoveries[id])
    }

    /// The calls not over, by id.
    var calls: [CallID: CallRecord] {
        Dictionary(uniqueKeysWithValues: latest.keys.compactMap { id in record(id).map { (id, $0) } })
    }

    /// The calls in the order they appeared.
    var records: [CallRecord] { order.compactMap(record) }
}

/// Renders `netres ctl calls`: one line per call, or one JSON object `{"calls":[...]}`.
enum CallsReport {
    static func human(_ records: [CallRecord]) -> String {
        guard !records.isEmpty else { return "no calls" }
        return records.map { call in
            "call \(call.id): account \(call.account), \(call.direction.rawValue) "
                + "\(call.direction == .outgoing ? "to" : "from") \(LogText.escaped(call.peer, limit: 120)), "
                + "\(call.phase.rawValue), media \(call.mediaAddress ?? "none"), "
                + "\(call.packetsReceived ?? 0) RTP packets received, last recovery: \(call.lastRecovery ?? "none")"
        }.joined(separator: "\n")
    }

    static func json(_ records: [CallRecord]) -> String {
        JSONObject([
            (
                "calls",
                .array(
                    records.map { call in
                        .object(
                            JSONObject([
                                ("id", .string(call.id.rawValue)), ("account", .string(call.account)),
                                ("peer", .string(LogText.escaped(call.peer, limit: 120))),
                                ("state", .string(call.phase.rawValue)),
                                ("direction", .string(call.direction.rawValue)),
                                ("media_address", call.mediaAddress.map(JSONValue.string) ?? .null),
                                ("rtp_packets_received", .int(Int64(call.packetsReceived ?? 0))),
                                ("last_recovery", call.lastRecovery.map(JSONValue.string) ?? .null),
                            ]))
                    })
            )
        ]).rendered
    }
}
