"""The vm environment kind: a QEMU guest (KVM where it can run the guest,
else TCG), driven only through the QEMU guest agent; with docker = true,
the workloads run in a container of the same image inside it (vm-docker).

One concern per module: spec.py (the study-file model), kind.py (presets,
factory, host probe, leftover cleaner, memory footprint), environment.py
(the Environment: start, exec, facts, stop), qemu.py (the QEMU process),
qemu_cmdline.py (its command line, a pure function), qmp_sync.py (QMP
client), guestagent.py (exec and files in the guest), guestnet.py (tap and
guest address on the client host's bridge), guestdocker.py (Docker Engine in
the guest), disk.py (base and data disks), kvm_probe.py (can KVM run a
guest here).

Layout of one running VM (slug = <run id>-<environment name>)::

    DATA_ROOT/<slug>.vm/root.qcow2   copy-on-write overlay on the base disk
    DATA_ROOT/<slug>.vm/data.raw     the data disk (virtio-blk, /isobench/data)
    DATA_ROOT/<slug>.vm/serial.log   the guest's console (errors only)
    DATA_ROOT/<slug>.vm/qemu.log     QEMU's own stderr
    SOCKET_ROOT/<slug>/qga.sock      guest agent (virtio-serial)
    SOCKET_ROOT/<slug>/qmp.sock      QMP monitor

The qemu process is named ``isobench-<slug>`` (``-name``): the kind's
cleaner finds leftovers by that name and by these directories. stop() quits
QEMU and removes both directories; QEMU also dies with its parent
(PDEATHSIG), so a SIGKILLed ``isobench run`` leaves only files, which
``isobench clean`` removes.
"""
