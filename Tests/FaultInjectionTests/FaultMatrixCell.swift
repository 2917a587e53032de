import NetworkLab

/// One row of the fault matrix: a link, traffic or registrar fault, played the same way in every
/// app state.
enum FaultMatrixCell: String, CaseIterable, Sendable {
    case carrierLoss = "carrier-loss", adminDown = "admin-down"
    case addressChangeMakeBeforeBreak = "address-change (make-before-break)"
    case addressChangeBreakBeforeMake = "address-change (break-before-make)"
    case renumber, defaultRouteLoss = "default-route-loss", linkRecreate = "link-recreate"
    case interfaceSwitch = "interface-switch (wifi to cellular and back)"
    case rename = "rename", move = "move to another host"
    case flap = "flap 10 every 200ms", partition = "partition (both ways)"
    case packetLoss = "packet-loss 30%"
    case rateLimit = "rate-limit 64 kbit/s + address change"
    case delay = "delay 200±50ms + address change"
    case netlinkOverrun = "netlink-overrun 2000 changes"
    case serviceUnavailable = "503 Retry-After 1 + address change"
    case droppedOK = "dropped 200 OK + address change"
    case reject481 = "481 to next in-dialog + address change"

    /// The cell needs a second, higher-metric link ("cell") the client may use too.
    var needsCellular: Bool { self == .interfaceSwitch }

    /// The client's path is down for a while and netlink shows it (admin, carrier, route or the
    /// link itself): nothing may be sent to the registrar meanwhile. Partitions and loss are
    /// invisible to netlink, so the client cannot know; they are not in this set.
    var takesPathDown: Bool {
        switch self {
        case .carrierLoss, .adminDown, .defaultRouteLoss, .linkRecreate, .rename, .move: true
        default: false
        }
    }

    /// How long the cell may take to converge: a lost 200 OK over TCP is only noticed when the
    /// REGISTER transaction times out (64 × T1 = 32 s, RFC 3261 Timer F), after the ~20 s the
    /// runtime damps a suspended cell's quick app-state changes, so that row gets 60 s.
    var convergeBound: Duration { self == .droppedOK ? .seconds(60) : .seconds(30) }

    /// The registrar fault armed before the link fault, if any.
    var registrarFault: RegistrarFault? {
        switch self {
        case .serviceUnavailable: .serviceUnavailable(retryAfter: 1, count: 2)
        case .droppedOK: .dropNextRegisterOK
        case .reject481: .reject481NextInDialog
        default: nil
        }
    }

    /// Plays the cell's link or traffic fault in `lab` (arming is the caller's); returns when undone.
    func play(in lab: NetworkLab, wifi: LabLink, cellular: LabLink?, elsewhere: LabHost?) async throws {
        switch self {
        case .carrierLoss: try await lab.inject(.carrierLoss(wifi, for: .seconds(2)))
        case .adminDown: try await lab.inject(.adminDown(wifi, for: .seconds(2)))
        case .addressChangeMakeBeforeBreak, .serviceUnavailable, .droppedOK, .reject481:
            try await lab.inject(.addressChange(wifi, .makeBeforeBreak))
        case .addressChangeBreakBeforeMake: try await lab.inject(.addressChange(wifi, .breakBeforeMake))
        case .renumber: try await lab.inject(.renumber(wifi))
        case .defaultRouteLoss: try await lab.inject(.defaultRouteLoss(wifi, for: .seconds(2)))
        case .linkRecreate: try await lab.inject(.linkRecreate(wifi, after: .seconds(2)))
        case .interfaceSwitch:
            guard let cellular else { return }
            try await lab.inject(.interfaceSwitch(from: wifi, to: cellular, for: .seconds(3)))
        case .rename: try await lab.inject(.rename(wifi, to: "wlan9", for: .seconds(2)))
        case .move:
            guard let elsewhere else { return }
            try await lab.inject(.moveToHost(wifi, elsewhere, for: .seconds(2)))
        case .flap: try await lab.inject(.flap(wifi, FlapSchedule(count: 10, period: .milliseconds(200))))
        case .partition: try await lab.inject(.partition(wifi, .both, for: .seconds(2)))
        case .packetLoss: try await lab.inject(.packetLoss(wifi, percent: 30, for: .seconds(2)))
        case .rateLimit, .delay:
            let traffic: Fault =
                self == .delay
                ? .delay(wifi, delay: .milliseconds(200), jitter: .milliseconds(50), for: .seconds(5))
                : .rateLimit(wifi, bitsPerSecond: 64_000, for: .seconds(5))
            async let held = lab.inject(traffic)
            // The address changes while the traffic fault holds, so the new REGISTERs go through it.
            let installed = self == .delay ? "delay relay on" : "\(traffic): begin"
            _ = await eventually(within: .seconds(5)) { await lab.events().contains { $0.what.hasPrefix(installed) } }
            try await Task.sleep(for: .milliseconds(300))
            try await lab.inject(.addressChange(wifi, .makeBeforeBreak))
            _ = try await held
        case .netlinkOverrun: try await lab.inject(.netlinkOverrun(wifi, changes: 2000))
        }
    }
}
