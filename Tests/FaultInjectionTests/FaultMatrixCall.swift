import Foundation
import NetworkLab
import Testing

/// The fault matrix's `call` column: the foreground cell with an established call. The UDP
/// account (``CallFaultLab/user``) calls sipp (`uas-matrix-call`, beside the registrar, through
/// its proxy) with `netres ctl call` before the fault; after it the call must still be active,
/// re-INVITEd once per change of its path or address (``FaultMatrixCell/reinvitesOfACall``), the
/// first after the registrar confirmed that account's REGISTER, and not at all otherwise (or, when
/// the registrar's 481 fault met the re-INVITE, ended without a BYE). sipp's message log and the registrar's request log are the witnesses; the hang-up
/// at the end must let sipp finish cleanly (exit 0).
extension CallFaultLab {
    /// The call helpers over a matrix cell's lab, whose phone already runs `netres run` with
    /// ``CallFaultLab/user`` as its UDP account and the control socket at `lab.directory`.
    init(
        matrix lab: NetworkLab, phone: LabHost, server: LabHost, wifi: LabLink, registrar: LabRegistrar, client: pid_t
    ) {
        self.lab = lab
        self.phone = phone
        self.server = server
        self.wifi = wifi
        self.registrar = registrar
        self.client = client
    }
}

/// A call placed in a matrix cell, and its verdict after the fault.
struct FaultMatrixCall {
    let calls: CallFaultLab
    let far: LabSIPp
    let id: String

    /// Starts sipp and places the call; returns when sipp has the ACK of its 200 OK.
    static func place(in calls: CallFaultLab) async throws -> Self {
        let far = try await calls.farEnd("uas-matrix-call")
        return Self(calls: calls, far: far, id: try await calls.placeCall(to: far))
    }

    /// Checks the call after `cell`'s fault (registrar lines from `began` on), hangs up, and says
    /// whether every check held.
    func verdict(after cell: FaultMatrixCell, since began: Double) async throws -> Bool {
        let expected = cell.reinvitesOfACall
        // A hang guard for the last re-INVITE's ACK; with none expected, a grace for a wrong one.
        _ = await eventually(within: .seconds(expected.upperBound == 0 ? 2 : 20)) {
            far.received("ACK").count > expected.upperBound
        }
        let invites = far.received("INVITE")
        let reinvites = invites.count - 1
        let callID = invites.first?.header("Call-ID") ?? "?"
        let requests = calls.registrar.requests().filter { $0.at >= began }
        let registered = requests.firstIndex { $0.kind == "REGISTERED" && $0.user == CallFaultLab.user }
        let reinvited = requests.firstIndex { $0.kind == "INVITE" && $0.fields["callid"] == callID }
        let ordered = reinvites == 0 || (registered != nil && reinvited != nil && registered! < reinvited!)
        let state = try await calls.state(of: id)
        let witness = "sipp: \(far.diagnostics()); registrar: \(requests.map { "\($0.kind) \($0.user)" })"
        // The registrar's 481 fault answers whichever in-dialog request comes first: when that is
        // the call's re-INVITE, the call is reported lost, with no BYE (issue 10), and sipp never
        // heard of it (it is stopped with the lab).
        if requests.contains(where: {
            $0.kind == "FAULT481" && $0.user == CallFaultLab.user && $0.fields["method"] == "INVITE"
        }) {
            let lost = state == nil && far.received("BYE").isEmpty && reinvites == 0
            #expect(lost, "\(cell) with a call: 481 to its re-INVITE, yet the call is \(state ?? "gone"); \(witness)")
            return lost
        }
        #expect(state == "active", "\(cell) with a call: the call is \(state ?? "gone"); \(witness)")
        let reinvitedRight = expected.contains(reinvites) && ordered
        let message =
            "\(cell) with a call: \(reinvites) re-INVITEs (want \(expected)), the first after the REGISTER: \(ordered)"
        #expect(reinvitedRight, "\(message); \(witness)")
        // While flap damping holds the path's return the BYE waits for it (sent when it returns).
        try await calls.ctl("hangup", id)
        let exit = await far.exitCode(within: .seconds(30))
        #expect(exit == 0, "\(cell) with a call: sipp ended with \(exit.map { "\($0)" } ?? "no exit"); \(witness)")
        return state == "active" && reinvitedRight && exit == 0
    }
}

extension FaultMatrixCell {
    /// How many re-INVITEs an established call gets: one per change of what it rides on that the
    /// daemon decides (the path lost and back, the address or the interface changed). None for
    /// loss and partitions (invisible to netlink). At most one for an overrun: the events it
    /// lost may have taken the call's address away and back (a dump cannot tell), so when the
    /// resync reports a change of addresses the daemon re-registers and re-INVITEs once, as for
    /// any address change. Two for the switch to cellular and back; a flap gets one per return
    /// decided before flap damping holds the rest (up to three here).
    var reinvitesOfACall: ClosedRange<Int> {
        switch self {
        case .partition, .packetLoss: 0...0
        case .netlinkOverrun: 0...1
        case .interfaceSwitch: 2...2
        case .flap: 1...3
        default: 1...1
        }
    }

}
