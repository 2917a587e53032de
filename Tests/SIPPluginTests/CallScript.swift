import ResilienceTesting

@testable import SIPPlugin

/// A ``CallMachine`` driven through its inputs alone on a manual clock, the way the agent drives
/// it, with what a value test needs: new exchange ids, the far end's descriptions, the steps that
/// take a call to `active`. No sockets.
struct CallScript {
    let clock: ManualClock
    var machine: CallMachine
    private var lastExchange: UInt64 = 0
    static let timers = SIPTimers()
    static let wifi = FlowNumber(rawValue: 1)
    static let cellular = FlowNumber(rawValue: 2)
    static let dialog = Dialog.ID(callID: "c1@198.18.0.1", localTag: "ours")
    static let audio = [SessionDescription.Media(port: 4_000, formats: ["0", "8"])]

    /// A call we place (we own the Call-ID), not yet asked to ring.
    static func placing(seed: UInt64 = 1, clock: ManualClock = ManualClock()) -> CallScript {
        CallScript(
            machine: CallMachine(
                placing: dialog, sdp: SDPOfferAnswer(sessionID: 1_000), timers: timers, seed: seed, at: clock.now),
            clock: clock)
    }

    /// A call we place whose first INVITE is out, and the exchange placing it.
    static func inviting(seed: UInt64 = 1) -> (CallScript, ExchangeID) {
        var script = placing(seed: seed)
        let exchange = script.exchange()
        _ = script.handle(.place(exchange, flow: wifi))
        _ = script.describe(exchange, attempt: 1)
        return (script, exchange)
    }

    /// The far end's INVITE ringing here (the far end owns the Call-ID).
    static func ringing(seed: UInt64 = 1, offering direction: SessionDescription.Direction = .sendrecv) throws
        -> CallScript
    {
        let clock = ManualClock()
        var script = CallScript(
            machine: try CallMachine(
                answering: far(direction), cseq: 1, localAddress: "198.18.0.1",
                dialog: Dialog.ID(callID: "c2@198.18.0.9", localTag: "ours", remoteTag: "theirs"),
                sdp: SDPOfferAnswer(sessionID: 2_000), timers: timers, seed: seed, at: clock.now),
            clock: clock)
        _ = script.handle(.ringing(timeout: .seconds(60)))
        return script
    }

    private init(machine: CallMachine, clock: ManualClock) {
        self.machine = machine
        self.clock = clock
    }

    /// A far-end description with `direction`, as it would answer or offer.
    static func far(_ direction: SessionDescription.Direction, version: UInt64 = 1) -> SessionDescription {
        SessionDescription(
            origin: .init(sessionID: 77, version: version, connection: .init(address: "198.18.0.9")),
            connection: .init(address: "198.18.0.9"),
            media: [.init(port: 5_000, formats: ["0"], direction: direction)])
    }

    mutating func handle(_ input: CallInput) -> [CallAction] { machine.handle(input, at: clock.now) }

    /// A new exchange id.
    mutating func exchange() -> ExchangeID {
        lastExchange += 1
        return ExchangeID(rawValue: lastExchange)
    }

    /// The media session answers the describe step of `exchange`'s attempt: the offer sent.
    mutating func describe(_ exchange: ExchangeID, attempt: Int) -> [CallAction] {
        handle(.mediaDescribed(.offer(exchange, attempt: attempt), .success(Self.audio), address: "198.18.0.1"))
    }

    /// The offer the call sent in `actions` (nil: none).
    static func sentOffer(_ actions: [CallAction]) -> (method: String, offer: SessionDescription, replaces: String?)? {
        for case .sendOffer(let send) in actions { return (send.method, send.offer, send.replaces) }
        return nil
    }

    /// A 2xx with the far end's answer (`allow`: its `Allow`) to `exchange`'s attempt.
    mutating func answered(
        _ exchange: ExchangeID, attempt: Int, _ direction: SessionDescription.Direction = .sendrecv,
        allow: [String] = ["INVITE", "ACK", "BYE"]
    ) -> [CallAction] {
        handle(.offerResponse(exchange, attempt: attempt, .answered(.parsed(Self.far(direction)), allow: allow)))
    }

    /// Places the call and has it answered: `active`, the Call-ID ours (`allow`: the far end's).
    static func established(
        seed: UInt64 = 1, allow: [String] = ["INVITE", "ACK", "BYE"], clock: ManualClock = ManualClock()
    ) -> CallScript {
        var script = placing(seed: seed, clock: clock)
        let placing = script.exchange()
        _ = script.handle(.place(placing, flow: wifi))
        _ = script.describe(placing, attempt: 1)
        _ = script.handle(.dialogChanged(Dialog.ID(callID: dialog.callID, localTag: "ours", remoteTag: "theirs")))
        _ = script.answered(placing, attempt: 1, allow: allow)
        return script
    }

    /// Whether `actions` complete `exchange` with `outcome`.
    static func completes(_ actions: [CallAction], _ exchange: ExchangeID, _ outcome: ExchangeOutcome) -> Bool {
        actions.contains(.completed(exchange, outcome))
    }

    /// The instant of the first `timer` armed in `actions`.
    static func armed(_ timer: CallTimer, in actions: [CallAction]) -> ContinuousClock.Instant? {
        for case .arm(timer, let at) in actions { return at }
        return nil
    }
}
