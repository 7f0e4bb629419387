; Inno Setup script for dpdesk on Windows: installs the PyInstaller one-folder bundle.
;
; Build (on Windows, from the repository root, after the bundle; see docs/install.md):
;   py -3.11 -m venv build-venv
;   build-venv\Scripts\python -m pip install ".[postgresql,excel,package]" pillow
;   build-venv\Scripts\pyinstaller --noconfirm --distpath packaging\out\dist --workpath packaging\out\pyi-work packaging\dpdesk.spec
;   "C:\Program Files (x86)\Inno Setup 6\ISCC.exe" /DAppVersion=0.1.0 packaging\windows\dpdesk.iss
; Output: packaging\out\dpdesk-0.1.0-setup.exe
;
; Per-user install by default (no administrator rights needed; the curator may choose all users).

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#define AppName "dpdesk"
#define BundleDir "..\out\dist\dpdesk"

[Setup]
AppId={{6F1C2B9E-3D4A-4B8E-9C61-5A2E7D0F4B13}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=dpdesk developers
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\out
OutputBaseFilename={#AppName}-{#AppVersion}-setup
SetupIconFile={#BundleDir}\_internal\dpdesk\resources\icons\dpdesk.ico
UninstallDisplayIcon={app}\dpdesk.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesAssociations=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "assoc"; Description: "Open .dpdesk project files with dpdesk"; GroupDescription: "File types:"

[Files]
; The whole one-folder bundle: dpdesk.exe (windowed), dpdesk-cli.exe (console) and _internal\.
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\dpdesk.exe"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\dpdesk.exe"; Tasks: desktopicon

[Registry]
Root: HKA; Subkey: "Software\Classes\.dpdesk"; ValueType: string; ValueName: ""; ValueData: "dpdesk.project"; Flags: uninsdeletevalue; Tasks: assoc
Root: HKA; Subkey: "Software\Classes\dpdesk.project"; ValueType: string; ValueName: ""; ValueData: "dpdesk project"; Flags: uninsdeletekey; Tasks: assoc
Root: HKA; Subkey: "Software\Classes\dpdesk.project\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\dpdesk.exe,0"; Tasks: assoc
Root: HKA; Subkey: "Software\Classes\dpdesk.project\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\dpdesk.exe"" ""%1"""; Tasks: assoc

[Run]
; The self-test runs offscreen and prints to the console, so use the console twin.
Filename: "{app}\dpdesk-cli.exe"; Parameters: "--self-test"; Description: "Run the dpdesk self-test now"; Flags: postinstall unchecked runhidden waituntilterminated
Filename: "{app}\dpdesk.exe"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent
