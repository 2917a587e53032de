import Foundation
import NetworkLab

/// The client side of a scenario: the steps that act on the client and its account
/// (`app-state`, `push-token`, `call`, `message`, see `LabStep+Client.swift`) and, with
/// `push: true`, the lab's push service, which delivers each push the registrar asks for by
/// running `netres ctl [--socket PATH] push ACCOUNT --kind KIND` in the client host.
///
/// Invariants: what a step ran and what came of it is in the printed timeline, and a step that
/// fails (a `netres ctl` that cannot reach the client, a call never rung) is recorded there, not
/// thrown: the run goes on. sipp callers of different steps use different ports (5080 + the
/// step's index), so steps may overlap.
struct LabClientSide: Sendable {
    var client: LabHost
    var server: LabHost
    var registrar: LabRegistrar?
    /// `netres ctl [--socket PATH]`.
    var ctl: [String]

    /// The push service's port in the server host.
    static let pushPort = 8088

    init(client: LabHost, server: LabHost, registrar: LabRegistrar?, controlSocket: String?) {
        self.client = client
        self.server = server
        self.registrar = registrar
        let netres = Bundle.main.executablePath ?? CommandLine.arguments[0]
        ctl = [netres, "ctl"] + (controlSocket.map { ["--socket", $0] } ?? [])
    }

    /// The registrar's options for a scenario: a push proxy when it asks for push.
    static func registrarOptions(push: Bool) -> RegistrarOptions {
        RegistrarOptions(pushService: push ? "\(LabAddress.service4):\(pushPort)" : nil)
    }

    /// Starts the push service beside the registrar; it delivers into the client host.
    func startPushService(_ lab: NetworkLab) async throws -> LabPushService {
        try await lab.startPushService(
            in: server, address: LabAddress.service4, port: Self.pushPort, deliverIn: client,
            command: ctl + ["push", "@ACCOUNT@", "--kind", "@KIND@"])
    }

    /// Plays a client step (the `index`-th of the timeline).
    func play(_ step: LabStep, index: Int, lab: NetworkLab) async throws {
        switch step.kind {
        case .appState:
            await lab.runStep("app-state \(step.value)", in: client, ctl + ["state", step.value])
        case .pushToken:
            await lab.runStep("push-token \(step.target)", in: client, ctl + ["push-token", step.target, step.value])
        default:
            guard let registrar else {
                throw NetworkLabError(
                    .invalidRequest, "\(step.text): the scenario has no registrar: true", seed: lab.seed)
            }
            if step.kind == .call {
                _ = try await lab.call(
                    step.target, through: registrar, from: server, port: 5080 + index, mediaPort: 16_100 + 2 * index,
                    within: step.duration)
            } else {
                _ = try await lab.message(
                    step.target, through: registrar, from: server, port: 5080 + index, within: step.duration)
            }
        }
    }
}
