#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The engine loop's one input queue. Producers (the gpsd reader thread, libmosquitto's loop
/// thread, timers, the control socket) post from any thread; the loop takes everything waiting at
/// once, so inputs that pile up while it works are handled together and followed by ONE outbox pump
/// (one commit for a fix and the PUBACKs that came with it). Posting from the adapters' own threads
/// spares each fix and each PUBACK the hop through a forwarding task.
final class EngineInbox<Input: Sendable>: Sendable {
    private struct State {
        var waiting: [Input] = []
        var consumer: CheckedContinuation<[Input], Never>?
        var closed = false
        var deferring: InputDeferral = []
        /// Droppable inputs dropped since start.
        var dropped = 0
    }

    private let state = Mutex(State())

    /// Inputs posted with one of these kinds do not wake the loop: they are handled with the next
    /// input that does (the next fix, a timer, the upkeep tick).
    var deferred: InputDeferral {
        get { state.withLock { $0.deferring } }
        set { state.withLock { $0.deferring = newValue } }
    }

    /// True while the loop waits for input (tests wait for it before posting).
    var hasParkedConsumer: Bool { state.withLock { $0.consumer != nil } }

    /// Posts `input` once `delay` has passed, unless the returned task is cancelled first: every
    /// timer of the engine (the state machine's, the commit window, the fleet rollback, shutdown).
    @discardableResult
    func post(_ input: Input, after delay: Duration) -> Task<Void, Never> {
        Task { [self] in
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            post(input)
        }
    }

    /// Inputs waiting beyond which a `droppable` one (a fix, an inbound message) is dropped rather
    /// than queued: a loop that falls behind cannot make the inbox grow without bound. Driver
    /// presses, PUBACKs, timers and control requests are never dropped.
    static var capacity: Int { 10_000 }
    /// Droppable inputs dropped since start.
    var droppedInputs: Int { state.withLock { $0.dropped } }

    /// An input that wakes the loop takes the deferred ones along, ahead of it: the loop sees
    /// everything in the order it was posted (a control request after the PUBACKs before it).
    func post(_ input: Input, mayWait kind: InputDeferral = [], droppable: Bool = false) {
        // The parked loop is resumed outside the lock.
        let wake = state.withLock { state -> (CheckedContinuation<[Input], Never>, [Input])? in
            guard !state.closed, !droppable || state.waiting.count < Self.capacity else {
                if !state.closed { state.dropped += 1 }
                return nil
            }
            state.waiting.append(input)
            guard let consumer = state.consumer, kind.isEmpty || !state.deferring.isSuperset(of: kind) else { return nil }
            state.consumer = nil
            defer { state.waiting = [] }
            return (consumer, state.waiting)
        }
        if let (consumer, batch) = wake { consumer.resume(returning: batch) }
    }

    /// Everything posted since the last call, oldest first; suspends while nothing is there. Nil once
    /// the consuming task is cancelled.
    func next() async -> [Input]? {
        switch take(orPark: nil) {
        case .batch(let batch): return batch
        case .closed: return nil
        case .nothing: break
        }
        return await withTaskCancellationHandler {
            let batch = await withCheckedContinuation { continuation in
                switch take(orPark: continuation) {
                case .batch(let batch): continuation.resume(returning: batch)
                case .closed: continuation.resume(returning: [])
                case .nothing: break
                }
            }
            return batch.isEmpty ? nil : batch
        } onCancel: {
            let parked = state.withLock {
                $0.closed = true
                return $0.consumer.take()
            }
            parked?.resume(returning: [])
        }
    }

    private enum Take {
        case batch([Input])
        case closed
        case nothing
    }

    /// Takes what is waiting; if nothing is and `consumer` is given, parks it for `post` to resume.
    private func take(orPark consumer: CheckedContinuation<[Input], Never>?) -> Take {
        state.withLock { state in
            if !state.waiting.isEmpty {
                defer { state.waiting = [] }
                return .batch(state.waiting)
            }
            if state.closed { return .closed }
            if let consumer { state.consumer = consumer }
            return .nothing
        }
    }
}

/// Kinds of input that need not wake the engine loop at once; the loop says which wait now.
struct InputDeferral: OptionSet, Sendable {
    let rawValue: UInt8

    /// A PUBACK while the pump has free slots in flight and nothing to fill them with.
    static let acknowledgement = InputDeferral(rawValue: 1)
    /// A fix while earlier ones wait for the position commit window, whose timer wakes the loop.
    static let fix = InputDeferral(rawValue: 2)
}
