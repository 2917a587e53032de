/// One call of an agent: its value (``CallMachine``, which decides everything that needs no
/// I/O) and what the agent needs to carry the machine's actions out. Every other field is an I/O
/// object or a message the agent must copy or resend, never a decision (ARCHITECTURE.md, "Calls"):
///
/// Invariants: `dialogID` names an entry of the agent's dialog table while the call is not
/// ended; `timers` holds at most one task per ``CallTimer``, all cancelled when the call ends;
/// `flows` holds the flow objects behind every flow number the machine's exchanges name;
/// `sentAnswer` is the 2xx the machine's ACK wait resends.
struct SIPCall {
    let id: CallID
    /// The far end's URI: To and Request-URI fallback of our requests, and every event's peer.
    let peer: String
    /// The app's media; a ringing incoming call holds a placeholder until answered.
    var media: any MediaSession
    var machine: CallMachine
    /// The far end's request whose offer we answer (its INVITE while ringing): what the 180, the
    /// 2xx and a refusal copy, how they go (its server transaction), and the flow whose Contact
    /// the answer carries.
    var answering: FarEndRequest?
    /// Our last INVITE or UPDATE (the request of the exchange in progress): what a CANCEL copies,
    /// and whose transaction may hold its final response before the call hears of it.
    var outgoing: OutgoingOffer?
    /// The INVITE our `Replaces` INVITE stands in for (RFC 3891): CANCELled if the far end refuses.
    var replacedInvite: SIPMessage?
    /// Our last 2xx to an INVITE and how it is sent: what ``CallAction/retransmitAnswer`` resends.
    var sentAnswer: SentAnswer?
    /// The flow objects behind the flow numbers the machine's exchanges name.
    var flows: [FlowNumber: SIPTransport] = [:]
    /// The timers the machine armed (see ``CallTimer``).
    var timers: [CallTimer: Task<Void, Never>] = [:]

    init(id: CallID, peer: String, media: any MediaSession, machine: CallMachine) {
        self.id = id
        self.peer = peer
        self.media = media
        self.machine = machine
    }

    /// The dialog's identity (the machine's).
    var dialogID: Dialog.ID { machine.dialog }
    /// Whether this end placed the call.
    var isOutgoing: Bool { machine.ownsCallID }
    /// The machine's phase.
    var phase: CallPhase { machine.phase }
    /// The CSeq number of the INVITE whose 2xx waits for its ACK (the machine's ``AckWait``).
    var awaitingAck: UInt32? { machine.ackWait?.cseq }
}

/// A request of the far end being answered, and how its responses go.
struct FarEndRequest {
    let request: SIPMessage
    let respond: @Sendable (SIPMessage, ContinuousClock.Instant) -> Void
    /// The flow whose Contact and address the answer carries (nil: none is open).
    var flow: SIPTransport?
}

/// Our INVITE or UPDATE as sent for an attempt of an exchange; `settled` once its final outcome
/// reached the call (a CANCEL is pointless then).
struct OutgoingOffer {
    let request: SIPMessage
    let exchange: ExchangeID
    let attempt: Int
    var settled = false
}

/// Our 2xx to an INVITE as sent: the response and its server transaction's `respond`.
struct SentAnswer {
    let response: SIPMessage
    let respond: @Sendable (SIPMessage, ContinuousClock.Instant) -> Void
}
